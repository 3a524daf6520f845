package eviction_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/eviction"
)

// terminateForever makes the Deleter do what the API server does with a pod on a node that
// cannot be reached: it sets the pod's deletionTimestamp to the end of its grace period and
// keeps it, Terminating, since no kubelet confirms it; and tells the Manager.
func (h *harness) terminateForever(grace time.Duration) {
	h.onDelete(func(_ context.Context, ref eviction.PodRef) error {
		cur, _ := h.cache.Pod(ref.Namespace, ref.Name)
		if cur == nil || cur.UID != ref.UID {
			return eviction.ErrPodGone
		}
		if cur.DeletionTimestamp == nil {
			p := cur.DeepCopy()
			end := metav1.NewTime(h.clk.Now().Add(grace))
			secs := int64(grace / time.Second)
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &end, &secs
			h.setPod(p)
		}
		return nil
	})
}

// TestInFlightOnUnreachableNode: InFlight{Max: 2} and 6 pods due on a node whose deleted
// pods stay Terminating for good: each eviction stops counting in flight once its pod's
// deletionTimestamp (the end of its 30 s grace period) has passed, so the 6 go 2 at a time,
// all within bounded time; never more than 2 in flight by that definition.
func TestInFlightOnUnreachableNode(t *testing.T) {
	synctestRunManager(t, "unreachable", func(t *testing.T) {
		const grace = 30 * time.Second
		h := run(t, eviction.Options{InFlight: eviction.InFlight{Max: 2}})
		h.terminateForever(grace)
		h.setNode(newNode("n"))
		for i := range 6 {
			h.setPod(newPod(fmt.Sprint("p", i), "n"))
		}
		h.setNode(newNode("n", noExecute(unreachable, t0)))
		h.wait()
		for h.clk.Since(t0) < time.Hour {
			h.step(5 * time.Second)
		}
		calls := h.calls()
		if len(calls) != 6 {
			t.Fatalf("in an hour: deletions %v, want all 6 within about 90 s (2 each 30 s)", calls)
		}
		for i, c := range calls {
			inFlight := 0
			for _, before := range calls[:i] {
				if before.At.Add(grace).After(c.At) {
					inFlight++
				}
			}
			if inFlight >= 2 {
				t.Errorf("deletion %v: %d in flight before it (Terminating, grace not over), want at most 1; deletions %v", c, inFlight, calls)
			}
		}
		if last := calls[len(calls)-1]; last.At.Sub(t0) > 2*time.Minute {
			t.Errorf("the last deletion %v, want all 6 within 2 minutes; deletions %v", last, calls)
		}
	})
}
