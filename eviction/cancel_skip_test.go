package eviction_test

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestDeletionsAndMoves covers nodes and pods going away, and pods moving between nodes.
func TestDeletionsAndMoves(t *testing.T) {
	synctestRun(t, "node deleted cancels its pods' evictions", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.setPod(newPod("api", "n1", withTolerations(tolFor("a", 600))))
		h.setPod(newPod("other", "n2", withTolerations(tolFor("a", 900))))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setNode(newNode("n2", noExecute("a", t0)))
		h.wait()
		h.expectPending("web@+5m0s", "api@+10m0s", "other@+15m0s")
		h.step(time.Minute)
		h.removeNode("n1")
		h.wait()
		h.expectPending("other@+15m0s")
		h.expectEvents("web", "Scheduled default/web at +5m0s", "Cancelled default/web: HolderDeleted")
		h.expectEvents("api", "Scheduled default/api at +10m0s", "Cancelled default/api: HolderDeleted")
		h.stepTo(15 * time.Minute)
		h.expectDeleted("other@+15m0s")
	})

	synctestRun(t, "node deleted and re-created tainted schedules again", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.removeNode("n1")
		h.wait()
		h.expectPending()
		h.step(time.Minute)
		h.setNode(newNode("n1", noExecute("a", t0.Add(time.Minute))))
		h.wait()
		h.expectPending("web@+6m0s")
	})

	synctestRun(t, "pod deleted cancels its eviction", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.setPod(newPod("api", "n1", withTolerations(tolFor("a", 300))))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.removePod("web")
		h.wait()
		h.expectPending("api@+5m0s")
		h.expectEvents("web", "Scheduled default/web at +5m0s", "Cancelled default/web: TargetDeleted")
		h.stepTo(5 * time.Minute)
		h.expectDeleted("api@+5m0s")
	})

	// A pod re-created under the same name on another node (a StatefulSet pod, say) is
	// scheduled for the new node, with its new UID.
	for _, tc := range []struct {
		name     string
		update   string // "one update": delete and add merged; "delete, add": with the Manager idle in between; "delete+add": without
		n2Taints []v1.Taint
		wantAt   string            // pending after the move; "" for none
		reasons  []eviction.Reason // of the Cancelled event when nothing is pending
	}{
		{name: "delete, add, tainted", update: "delete, add", n2Taints: []v1.Taint{noExecute("b", t0)}, wantAt: "web@+2m0s"},
		{name: "delete+add, tainted", update: "delete+add", n2Taints: []v1.Taint{noExecute("b", t0)}, wantAt: "web@+2m0s"},
		{name: "one update, tainted", update: "one update", n2Taints: []v1.Taint{noExecute("b", t0)}, wantAt: "web@+2m0s"},
		{name: "one update, untainted", update: "one update", reasons: []eviction.Reason{eviction.ReasonPodReplaced}},
		{name: "delete, add, untainted", update: "delete, add", reasons: []eviction.Reason{eviction.ReasonPodDeleted}},
		// The delete may be processed after the cache already holds the new pod.
		{name: "delete+add, untainted", update: "delete+add", reasons: []eviction.Reason{eviction.ReasonPodDeleted, eviction.ReasonPodReplaced}},
	} {
		synctestRun(t, "pod re-created on another node: "+tc.name, func(t *testing.T) {
			h := run(t, eviction.Options{Workers: 4})
			if eviction.ShardOf("n1", 4) == eviction.ShardOf("n2", 4) {
				t.Fatal("n1 and n2 hash onto the same worker; pick other names")
			}
			tols := withTolerations(tolFor("a", 600), tolFor("b", 120))
			h.setNode(newNode("n1", noExecute("a", t0)))
			h.setNode(newNode("n2", tc.n2Taints...))
			h.setPod(newPod("web", "n1", tols))
			h.wait()
			h.expectPending("web@+10m0s")
			h.step(time.Minute)
			moved := newPod("web", "n2", tols, withUID("web-2"))
			switch tc.update {
			case "one update":
				h.setPod(moved)
			case "delete, add":
				h.removePod("web")
				h.wait()
				h.setPod(moved)
			case "delete+add":
				h.removePod("web")
				h.setPod(moved)
			}
			h.wait()
			if tc.wantAt == "" {
				h.expectPending()
				cancelled := h.obs.Of(evictiontest.Cancelled)
				if len(cancelled) != 1 || !slices.Contains(tc.reasons, cancelled[0].Reason) || cancelled[0].Pod.UID != "web-1" || cancelled[0].Pod.Holder != "n1" {
					t.Errorf("got Cancelled %v, want one for web-1 on n1 with a reason in %v", cancelled, tc.reasons)
				}
				h.step(time.Hour)
				h.expectDeleted()
				return
			}
			h.expectPending(tc.wantAt)
			if p := h.m.Pending(); len(p) == 1 && (p[0].Target.UID != "web-2" || p[0].Target.Holder != "n2") {
				t.Errorf("got pending %+v, want web-2 on n2", p[0].Target)
			}
			h.stepTo(2*time.Minute - time.Nanosecond)
			h.expectDeleted()
			h.step(time.Nanosecond)
			h.expectDeleted("web@+2m0s")
			if c := h.calls(); len(c) == 1 && (c[0].Ref.UID != "web-2" || c[0].Ref.Holder != "n2") {
				t.Errorf("got Deleter call for %+v, want web-2 on n2", c[0].Ref)
			}
		})
	}

	synctestRun(t, "unbound pod bound to a tainted node is scheduled", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "", withTolerations(tolFor("a", 300))))
		h.wait()
		h.expectPending()
		h.step(time.Minute)
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.wait()
		h.expectPending("web@+5m0s")
		h.stepTo(5 * time.Minute)
		h.expectDeleted("web@+5m0s")
	})

	synctestRun(t, "pod unbound while pending is cancelled", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.wait()
		h.setPod(newPod("web", "", withTolerations(tolFor("a", 300))))
		h.wait()
		h.expectPending()
		h.expectEvents("web", "Scheduled default/web at +5m0s", "Cancelled default/web: Unbound")
	})
}

// TestPodsAlreadyLeaving covers pods that have finished or are being deleted: they are not
// deleted again. An open eviction of such a pod ends with one Skipped; a pod that had none
// is not reported at all: it is not an eviction that was skipped.
func TestPodsAlreadyLeaving(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opt    podOption
		reason eviction.Reason
	}{
		{"succeeded", inPhase(v1.PodSucceeded), eviction.ReasonPodFinished},
		{"failed", inPhase(v1.PodFailed), eviction.ReasonPodFinished},
		{"terminating", terminating(), eviction.ReasonPodTerminating},
		{"terminating and failed", func(p *v1.Pod) { terminating()(p); p.Status.Phase = v1.PodFailed }, eviction.ReasonPodTerminating},
	} {
		synctestRun(t, tc.name+" on a tainted node: not reported", func(t *testing.T) {
			h := run(t, eviction.Options{})
			h.setPod(newPod("web", "n1", tc.opt))
			h.setNode(newNode("n1", noExecute("a", t0)))
			h.wait()
			h.step(time.Hour)
			h.expectDeleted()
			h.expectPending()
			if got := h.obs.Events(); len(got) != 0 {
				t.Errorf("got reports %v, want none", got)
			}
		})

		synctestRun(t, tc.name+" while pending closes it", func(t *testing.T) {
			h := run(t, eviction.Options{})
			h.setNode(newNode("n1", noExecute("a", t0)))
			h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
			h.wait()
			h.expectPending("web@+5m0s")
			h.step(time.Minute)
			h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300)), tc.opt))
			h.wait()
			h.expectPending()
			h.expectEvents("web",
				"Scheduled default/web at +5m0s",
				"Skipped default/web: "+string(tc.reason),
			)
			h.step(time.Hour)
			h.expectDeleted()
		})
	}

	synctestRun(t, "pod that finishes between its schedule and its deadline is not deleted", func(t *testing.T) {
		// The update about the pod's phase has reached the cache but not the Manager.
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.wait()
		h.cache.SetPod(newPod("web", "n1", withTolerations(tolFor("a", 300)), inPhase(v1.PodSucceeded)))
		h.step(time.Hour)
		h.expectDeleted()
		h.expectEvents("web", "Scheduled default/web at +5m0s", "Skipped default/web: PodFinished")
	})
}

// TestOwnDeletionIsNotSkipped: while the Deleter call of a pod runs, the Cache shows the pod
// terminating, as the API server does once the delete is accepted. That is the eviction's
// own doing: it ends with Succeeded alone, not with Skipped before it.
func TestOwnDeletionIsNotSkipped(t *testing.T) {
	synctestRun(t, "terminating during its own delete", func(t *testing.T) {
		h := run(t, eviction.Options{})
		release := make(chan error)
		h.onDelete(func(context.Context, eviction.PodRef) error { return <-release })
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1"))
		h.wait() // the call runs and waits for release
		h.setPod(newPod("web", "n1", terminating()))
		h.wait()
		release <- nil
		h.wait()
		h.expectEvents("web", "Scheduled default/web at +0s", "Started default/web (attempt 1)",
			"Succeeded default/web (attempt 1)")
	})
}

// TestLeavingWhileTheCallFails: the pod starts leaving on its own while its Deleter call
// runs, and the call then fails: the eviction closes with Skipped and the pod's reason,
// the report owed since the pod was seen leaving, not with Cancelled.
func TestLeavingWhileTheCallFails(t *testing.T) {
	synctestRun(t, "finished during a failing delete", func(t *testing.T) {
		h := run(t, eviction.Options{})
		release := make(chan error)
		h.onDelete(func(context.Context, eviction.PodRef) error { return <-release })
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1"))
		h.wait() // the call runs and waits for release
		h.setPod(newPod("web", "n1", inPhase(v1.PodSucceeded)))
		h.wait()
		release <- errAPI
		h.wait()
		h.expectEvents("web", "Scheduled default/web at +0s", "Started default/web (attempt 1)",
			"Skipped default/web: PodFinished")
	})
}
