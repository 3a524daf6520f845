package eviction_test

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
)

// TestWhichPodsAndWhen covers the basic decision for one pod on one node: no NoExecute
// taint, an untolerated taint, a taint tolerated forever, and a taint tolerated for a while.
func TestWhichPodsAndWhen(t *testing.T) {
	synctestRun(t, "no NoExecute taint", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noSchedule("maintenance"), v1.Taint{Key: "soft", Effect: v1.TaintEffectPreferNoSchedule}))
		h.setPod(newPod("web", "n1"))
		h.wait()
		h.expectPending()
		h.step(time.Hour)
		h.expectDeleted()
		if got := h.obs.Events(); len(got) != 0 {
			t.Errorf("got events %v, want none", got)
		}
	})

	synctestRun(t, "untolerated taint evicts now", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1"))
		h.setNode(newNode("n1", noSchedule("other"), noExecute("maintenance", t0)))
		h.wait()
		h.expectDeleted("web@+0s")
		h.expectPending()
	})

	synctestRun(t, "tolerated forever is never evicted", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolForever("maintenance"))))
		h.setNode(newNode("n1", noExecute("maintenance", t0)))
		h.wait()
		h.expectPending()
		h.step(24 * time.Hour)
		h.expectDeleted()
	})

	synctestRun(t, "finite toleration evicts at TimeAdded plus tolerationSeconds", func(t *testing.T) {
		h := run(t, eviction.Options{})
		// The taint was added 100 s before the Manager sees it: the countdown started then.
		h.clk.Step(100 * time.Second)
		h.setPod(newPod("web", "n1", withTolerations(tolFor("maintenance", 300))))
		h.setNode(newNode("n1", noExecute("maintenance", t0)))
		h.wait()
		h.expectPending("web@+5m0s")
		pending := h.m.Pending()
		if len(pending) != 1 || !pending[0].At.Equal(t0.Add(300*time.Second)) || pending[0].Target.Holder != "n1" || pending[0].Target.UID != "web-1" {
			t.Fatalf("got Pending %+v, want web-1 on n1 at %v", pending, t0.Add(300*time.Second))
		}
		h.stepTo(300*time.Second - time.Nanosecond)
		h.expectDeleted()
		h.step(time.Nanosecond)
		h.expectDeleted("web@+5m0s")
		h.expectPending()
	})

	synctestRun(t, "TimeAdded in the future", func(t *testing.T) {
		// Clock skew: the taint says it was added 10 s from now. Its countdown starts at
		// first sight, now, and stays there: the recheck at +5m finds the pod due.
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noExecute("a", t0.Add(10*time.Second))))
		h.wait()
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.wait()
		h.expectPending("web@+5m0s")
		h.stepTo(5 * time.Minute)
		h.expectDeleted("web@+5m0s")
		h.expectEvents("web",
			"Scheduled default/web at +5m0s",
			"Started default/web (attempt 1)",
			"Succeeded default/web (attempt 1)",
		)
	})

	synctestRun(t, "removing every taint cancels pending evictions", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolFor("maintenance", 300))))
		h.setPod(newPod("api", "n1", withTolerations(tolFor("maintenance", 600))))
		h.setNode(newNode("n1", noExecute("maintenance", t0)))
		h.wait()
		h.expectPending("web@+5m0s", "api@+10m0s")
		h.step(time.Minute)
		// A NoSchedule taint left on the node does not keep the evictions.
		h.setNode(newNode("n1", noSchedule("maintenance")))
		h.wait()
		h.expectPending()
		h.expectEvents("web", "Scheduled default/web at +5m0s", "Cancelled default/web: NotTainted")
		h.expectEvents("api", "Scheduled default/api at +10m0s", "Cancelled default/api: NotTainted")
		h.step(time.Hour)
		h.expectDeleted()
	})

	synctestRun(t, "taint without TimeAdded counts from when it is first seen", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.clk.Step(time.Minute)
		h.setPod(newPod("web", "n1", withTolerations(tolFor("maintenance", 300), tolForever("other"))))
		h.setNode(newNode("n1", noExecute("maintenance", time.Time{})))
		h.wait()
		h.expectPending("web@+6m0s")
		// Another update of the same taint, still without TimeAdded, keeps the first stamp.
		h.step(time.Minute)
		h.setNode(newNode("n1", noExecute("maintenance", time.Time{}), noExecute("other", time.Time{})))
		h.wait()
		h.expectPending("web@+6m0s")
		h.stepTo(6*time.Minute - time.Nanosecond)
		h.expectDeleted()
		h.step(time.Nanosecond)
		h.expectDeleted("web@+6m0s")
	})
}

// TestRecomputeOnChange checks that every change of taints or tolerations recomputes the
// deadline, and that the schedule follows it earlier and later (kube keeps the first one).
func TestRecomputeOnChange(t *testing.T) {
	synctestRun(t, "new taint with a shorter toleration moves the deadline earlier", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300), tolFor("b", 100))))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.expectPending("web@+5m0s")
		h.step(50 * time.Second)
		h.setNode(newNode("n1", noExecute("a", t0), noExecute("b", t0.Add(50*time.Second))))
		h.wait()
		h.expectPending("web@+2m30s")
		h.stepTo(150*time.Second - time.Nanosecond)
		h.expectDeleted()
		h.step(time.Nanosecond)
		h.expectDeleted("web@+2m30s")
	})

	synctestRun(t, "new untolerated taint evicts now", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.step(10 * time.Second)
		h.setNode(newNode("n1", noExecute("a", t0), noExecute("b", t0.Add(10*time.Second))))
		h.wait()
		h.expectDeleted("web@+10s")
	})

	synctestRun(t, "added toleration cancels", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.expectPending("web@+5m0s")
		// The first toleration that matches a taint is the one used.
		h.setPod(newPod("web", "n1", withTolerations(tolForever("a"), tolFor("a", 300))))
		h.wait()
		h.expectPending()
		h.expectEvents("web", "Scheduled default/web at +5m0s", "Cancelled default/web: Tolerated")
		h.step(time.Hour)
		h.expectDeleted()
	})

	synctestRun(t, "added toleration of a second taint schedules instead of evicting", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.onDelete(func(context.Context, eviction.PodRef) error { return errors.New("apiserver down") })
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.setNode(newNode("n1", noExecute("a", t0), noExecute("b", t0)))
		h.wait()
		// Due now, and failing: the pod gains a toleration of b while it waits to retry.
		if got := len(h.calls()); got != 1 {
			t.Fatalf("got %d Deleter calls, want 1", got)
		}
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300), tolFor("b", 600))))
		h.wait()
		h.expectPending("web@+5m0s")
		h.onDelete(nil)
		h.stepTo(5*time.Minute - time.Nanosecond)
		if got := len(h.calls()); got != 1 {
			t.Fatalf("got %d Deleter calls before the new deadline, want 1", got)
		}
		h.step(time.Nanosecond)
		h.expectDeleted("web@+0s", "web@+5m0s")
	})

	synctestRun(t, "removed toleration evicts now", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.expectPending("web@+5m0s")
		h.step(time.Minute)
		h.setPod(newPod("web", "n1"))
		h.wait()
		h.expectDeleted("web@+1m0s")
		h.expectPending()
	})

	synctestRun(t, "shortened toleration moves the schedule earlier", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 600))))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.expectPending("web@+10m0s")
		h.step(time.Minute)
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 120))))
		h.wait()
		h.expectPending("web@+2m0s")
		h.stepTo(2*time.Minute - time.Nanosecond)
		h.expectDeleted()
		h.step(time.Nanosecond)
		h.expectDeleted("web@+2m0s")
	})

	synctestRun(t, "toleration shortened below the time already spent evicts now", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 600))))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.step(5 * time.Minute)
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 60))))
		h.wait()
		h.expectDeleted("web@+5m0s")
	})

	synctestRun(t, "lengthened toleration moves the schedule later", func(t *testing.T) {
		// kube's "lengthening toleration shouldn't work" pins the opposite; here the
		// deadline always follows the current tolerations.
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 120))))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.expectPending("web@+2m0s")
		h.step(time.Minute)
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 600))))
		h.wait()
		h.expectPending("web@+10m0s")
		h.stepTo(10*time.Minute - time.Nanosecond)
		h.expectDeleted()
		h.step(time.Nanosecond)
		h.expectDeleted("web@+10m0s")
		h.expectEvents("web",
			"Scheduled default/web at +2m0s",
			"Scheduled default/web at +10m0s",
			"Started default/web (attempt 1)",
			"Succeeded default/web (attempt 1)",
		)
	})

	synctestRun(t, "changed TimeAdded moves the schedule", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.expectPending("web@+5m0s")
		h.step(time.Minute)
		// The taint was removed and added again: a new countdown.
		h.setNode(newNode("n1", noExecute("a", t0.Add(time.Minute))))
		h.wait()
		h.expectPending("web@+6m0s")
	})
}
