// The tests of package eviction, by file (a new test goes where its subject is):
//
//   - deadlines_test.go: which pods are scheduled, and when; deadlines that follow changes.
//   - cancel_skip_test.go: cancellations (pod or node deleted, pod moved) and skip reasons
//     (pods finished or terminating); a new Reason gets its test here.
//   - recheck_test.go: the recheck right before a delete; no second delete of a pod.
//   - deleter_failures_test.go, cache_failures_test.go: retries, timeouts, panics.
//   - observer_test.go, observer_contract_test.go, observers_test.go: what is reported, in
//     which order, and the property that every started eviction is closed.
//   - restart_test.go: deadlines across restarts; ordering_test.go, pod_lock_test.go:
//     concurrency; upstream_test.go: kube's own unit-test scenarios.
//   - bad_input_test.go: nil objects, bad options, odd caches.
//   - helpers_test.go: the harness (a Manager on a fake clock in a synctest bubble).

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
