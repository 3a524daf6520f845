// The tests of package engine, by file:
//
//   - example_test.go: a target that is not a pod, for godoc.
//   - multiholder_test.go: targets bound to several holders: the earliest deadline over
//     the bindings decides, the property test over random fleets, and the budgets counted
//     per holder and group.
//   - *_internal_test.go: the parts: the token bucket, the brake's counts, the budgets'
//     validation and causes, the fifo, the deadlines kept in nanoseconds.
//
// The behaviours the Engine shares with every instantiation (deadlines, cancellation,
// rechecks, retries, budgets, the Observer contract) are tested in package eviction, where
// each test runs on two instantiations of this Engine: pods on nodes (the Manager), and pods
// on their node and a device (see eviction/instantiations_test.go).

package engine_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine of an Engine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
