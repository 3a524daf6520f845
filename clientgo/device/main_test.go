// The tests of package device, by file:
//
//   - eviction_test.go: the model's cases on a Controller over a fake clientset, each pod's
//     DELETE timed to the nanosecond on a synctest bubble's clock;
//   - controller_test.go: kube's outward behaviour (the condition, two requests, Events,
//     the Eviction API, dry run), a restart, the rules' status, the budget, bad options, a
//     failed engine;
//   - source_test.go: the Source alone: names, bindings, taints; the rules' evicted counts;
//   - budget_test.go: the budget's Paused reads no store (the engine calls it under its
//     locks), holds what it has not counted until it has;
//   - kube_test.go (with kube_objects_test.go): kube's own test scenarios
//     (device_taint_eviction_test.go, v1.37.2), ported: every case's pods, requests, Events
//     and rule conditions at kube's times; the intended differences pinned;
//   - podgroups_test.go: claims reserved for a PodGroup, by mode and discovery;
//   - reach_test.go: readiness and the retries at the API server's return;
//   - events_test.go: the Events recorded for each report;
//   - example_test.go: a DRA driver that embeds the device side.
package device

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: informers, event
// broadcasters, engines and status writers must all stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
