// The tests of package engine, by file:
//
//   - example_test.go: a target that is not a pod, for godoc.
//   - multiholder_test.go: targets bound to several holders: the earliest deadline over
//     the bindings decides, the property test over random fleets, and the budgets counted
//     per holder and group.
//   - concurrency_test.go: the act workers follow the actuator's latency, against a
//     simulated client rate limiter and API server.
//   - robustness_test.go: failures at awkward moments (a lookup failing as an attempt ends,
//     a replacement seen by the recheck, a failed recheck at the gate), panics of the
//     caller's Source and Observer, and a failure count past its range.
//   - synced_test.go, inflight_leaving_test.go, damping_test.go, stats_test.go,
//     shutdown_test.go, hold_causes_test.go: the budgets' promises where they are needed:
//     the Brake and Confirm across a restart in the middle of an outage (synced), InFlight
//     on a holder that never confirms a deletion (GoneBy), LoopDamping's verdicts the same
//     from run to run, Stats of a held eviction whose recheck fails, an update left at
//     shutdown, a held eviction whose causes change. The model test over random runs is
//     eviction's budget_model_test.go.
//   - model_test.go: the model-based test over random fleets (the Actuator called only when
//     due, nothing due left standing, the Observer's contract, every transition in
//     eviction.go's table); defects_test.go,
//     heldretry_test.go, unreachable_test.go, unreachable_held_test.go: the defects the
//     safety issue found, and RetryUnreachable.
//   - actuator_test.go, backoff_test.go, budgets_internal_test.go, decide_internal_test.go,
//     eviction_internal_test.go, nanos_internal_test.go, stats_reasons_internal_test.go: the
//     parts: the Actuator's errors, the backoff, the budgets' validation, the decision, the
//     transitions, the deadlines kept in nanoseconds, the Stats' reasons.
//
// The behaviours the Engine shares with every instantiation (deadlines, cancellation,
// rechecks, retries, budgets, the Observer contract) are tested in package eviction, where
// each test runs on two instantiations of this Engine: pods on nodes (the Manager), and pods
// on their node and a device (see eviction/instantiations_test.go).

package engine_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine of an Engine outlives them.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: goroutines outlive the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
