package eviction_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/taintevict/taintevict/eviction"
)

// TestPodOnNodeAndDevice runs on the second instantiation alone: a pod bound to its node and
// to a device on it, each with the pod's tolerations. The device's taint evicts it at the
// device's deadline when that comes first, and the Deleter is told the device; when the
// device is untainted first, the node's later deadline stands; when both are untainted,
// the eviction is cancelled.
func TestPodOnNodeAndDevice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  func(h *harness, d *onDevices)
		want   []string // deletions
		events []string
	}{
		{
			name: "the device's deadline comes first",
			steps: func(h *harness, d *onDevices) {
				h.setNode(newNode("n1", noExecute("a", t0)))
				h.wait() // the node's taint first: the device is read when it is tainted
				d.setDevice("n1", noExecute("ecc", t0))
				h.wait()
				h.stepTo(time.Minute)
				h.stepTo(time.Hour)
			},
			want: []string{"web@+1m0s"},
			events: []string{
				"Scheduled default/web at +5m0s",
				"Scheduled default/web at +1m0s",
				"Started default/web (attempt 1)",
				"Succeeded default/web (attempt 1)",
			},
		},
		{
			name: "the device recovers first: the node's deadline stands",
			steps: func(h *harness, d *onDevices) {
				d.setDevice("n1", noExecute("ecc", t0))
				h.wait()
				h.setNode(newNode("n1", noExecute("a", t0)))
				h.wait()
				h.step(30 * time.Second)
				d.setDevice("n1")
				h.wait()
				h.stepTo(time.Minute)
				h.stepTo(5 * time.Minute)
				h.stepTo(time.Hour)
			},
			want: []string{"web@+5m0s"},
			events: []string{
				"Scheduled default/web at +1m0s",
				"Scheduled default/web at +5m0s",
				"Started default/web (attempt 1)",
				"Succeeded default/web (attempt 1)",
			},
		},
		{
			name: "both recover: cancelled",
			steps: func(h *harness, d *onDevices) {
				h.setNode(newNode("n1", noExecute("a", t0)))
				h.wait() // the node's taint first: the device is read when it is tainted
				d.setDevice("n1", noExecute("ecc", t0))
				h.wait()
				// The device recovers first: the node's later deadline is
				// back in force until the node recovers too.
				d.setDevice("n1")
				h.wait()
				h.setNode(newNode("n1"))
				h.wait()
				h.stepTo(time.Hour)
			},
			events: []string{
				"Scheduled default/web at +5m0s",
				"Scheduled default/web at +1m0s",
				"Scheduled default/web at +5m0s",
				"Cancelled default/web: NotTainted",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				current.Store(t, instantiations[1])
				defer current.Delete(t)
				h := run(t, eviction.Options{})
				d := h.m.(*onDevices)
				h.removeOnDelete()
				h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300), tolFor("ecc", 60))))
				h.wait()
				tc.steps(h, d)
				h.expectDeleted(tc.want...)
				h.expectEvents("web", tc.events...)
				if calls := h.calls(); len(tc.want) == 1 && len(calls) == 1 {
					wantHolder := "n1"
					if tc.name == "the device's deadline comes first" {
						wantHolder = device("n1")
					}
					if calls[0].Ref.Holder != wantHolder {
						t.Errorf("the Deleter was told the holder %q, want %q", calls[0].Ref.Holder, wantHolder)
					}
				}
			})
		})
	}
}
