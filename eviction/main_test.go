// The tests of package eviction, by file (a new test goes where its subject is). Every test
// that runs through synctestRun or synctestEach runs twice, once on each instantiation of
// the engine (instantiations_test.go): the Manager, pods bound to their node; and pods bound
// to their node and a device on it. Those that run through synctestRunManager are about
// the Manager alone (which updates it passes on to its engine).
//
//   - deadlines_test.go: which pods are scheduled, and when; deadlines that follow changes.
//   - skew_test.go: clocks that disagree: TimeAdded in the future, first sight, locations.
//   - restart_test.go: deadlines across restarts, FromTimeAdded and FromObservation.
//   - cancel_skip_test.go: cancellations (pod or node deleted, pod unbound or replaced) and
//     pods leaving on their own; a new Reason gets its test here.
//   - recheck_test.go: the recheck right before a delete decides as an update would; no
//     second delete of a pod.
//   - deleted_records_test.go: no record outlives its pod.
//   - deleter_failures_test.go, deletetimeout_test.go, cache_failures_test.go: retries,
//     timeouts, panics, and a Cache that fails.
//   - observer_test.go, observers_test.go, due_test.go: what is reported, with which pod and
//     deadline; Pending; dry-run mode.
//   - observer_contract_test.go: the Observer's contract, over random interleavings.
//   - brake_test.go, rate_limit_test.go, budgets_test.go: the budgets.
//   - budget_model_test.go: the budgets' invariants (stated there), checked against the
//     cluster over random runs with restarts, failures and pods Terminating for good, on the
//     Manager and on an Engine over a Source of the test's own; synced_test.go,
//     terminating_test.go, census_failures_test.go: the Brake and Confirm after a restart in
//     the middle of an outage, InFlight on an unreachable node, Confirm's census through a
//     failing Cache.
//   - idle_test.go: WaitIdle.
//   - ordering_test.go, pod_lock_test.go: concurrency: node updates first, coalescing, the
//     order of decisions about one pod.
//   - upstream_test.go: kube's own unit-test scenarios.
//   - bad_input_test.go: nil objects, bad options, odd caches, unknown operators.
//   - updates_internal_test.go: the Manager's filter of pod updates (tolerationsEqual).
//   - example_test.go, example_waitidle_test.go, example_budgets_test.go: godoc examples.
//   - bench_test.go, deletions_bench_test.go, updates_bench_test.go: the benchmarks of
//     BENCHMARKS.md (ZoneOutage, PodChurn, NodeRetaint, DeletionBurst, PodStatusUpdate).
//   - devices_test.go: the second instantiation alone: a pod bound to its node and to a
//     device, each with its deadline.
//   - helpers_test.go: the harness (a Manager or an engine on a fake clock in a synctest
//     bubble); instantiations_test.go: the two instantiations; export_test.go: what the
//     tests reach inside the package.

package eviction_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine of a Manager (an event worker, a
// delete worker, a dispatcher, a timeout watcher) outlives the tests and the example.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
