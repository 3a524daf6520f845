package eviction_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestCacheFailures covers a Cache whose lookups fail for a while.
func TestCacheFailures(t *testing.T) {
	synctestRun(t, "listing pods of a node fails, retried after the backoff base", func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff})
		h.setNode(newNode("n1"))
		h.setPod(newPod("web", "n1"))
		h.setPod(newPod("api", "n1", withTolerations(tolFor("a", 300))))
		h.wait()
		h.cache.SetError(errAPI)
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.expectPending()
		h.expectDeleted()
		h.cache.SetError(nil)
		h.step(exactBackoff.Base - time.Nanosecond)
		h.expectDeleted()
		h.step(time.Nanosecond)
		h.expectDeleted("web@+1s")
		h.expectPending("api@+5m0s")
	})

	synctestRun(t, "listing keeps failing: retried with growing delays until it works", func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff})
		h.setPod(newPod("web", "n1"))
		h.cache.SetError(errAPI)
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		// The retries at +1s, +3s, +7s and +15s (after 1, 2, 4 and 8 s) fail too; the delay
		// then stays at the cap, so the next retry comes at +23s.
		for _, d := range []time.Duration{1, 2, 4, 8} {
			h.step(d * time.Second)
			h.expectDeleted()
		}
		h.cache.SetError(nil)
		h.step(exactBackoff.Cap - time.Nanosecond)
		h.expectDeleted()
		h.step(time.Nanosecond)
		h.expectDeleted("web@+23s")
	})

	synctestRun(t, "listing pods of a deleted node fails, retried", func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.wait()
		h.expectPending("web@+5m0s")
		h.cache.SetError(errAPI)
		h.removeNode("n1")
		h.wait()
		h.cache.SetError(nil)
		h.step(exactBackoff.Base)
		h.expectPending()
		// The retry processes the pods against what is known then: the node is gone.
		h.expectEvents("web", "Scheduled default/web at +5m0s", "Cancelled default/web: HolderDeleted")
		h.stepTo(time.Hour)
		h.expectDeleted()
	})

	synctestRun(t, "cache failing while a pod update is processed: the update's pod is used", func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.cache.SetError(errAPI)
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.wait()
		h.expectPending("web@+5m0s")
		h.cache.SetError(nil)
		h.stepTo(5 * time.Minute)
		h.expectDeleted("web@+5m0s")
	})

	synctestRun(t, "cache failing while a pod delete is processed: cancelled anyway", func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.wait()
		h.cache.SetError(errAPI)
		h.removePod("web")
		h.wait()
		h.expectPending()
		h.expectEvents("web", "Scheduled default/web at +5m0s", "Cancelled default/web: TargetDeleted")
	})

	synctestRun(t, "cache failing at the recheck: retried", func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.wait()
		h.cache.SetError(errAPI)
		h.stepTo(5 * time.Minute)
		h.expectDeleted()
		h.step(exactBackoff.Base)
		h.expectDeleted()
		h.cache.SetError(nil)
		h.step(2 * exactBackoff.Base)
		h.expectDeleted("web@+5m3s")
		failed := h.obs.Of(evictiontest.Failed)
		if len(failed) != 2 || failed[0].Attempt != 0 || failed[1].Attempt != 0 ||
			!errors.Is(failed[0].Err, errAPI) || !strings.HasPrefix(failed[0].Err.Error(), "engine: recheck target default/web") {
			t.Errorf("got Failed %v, want two rechecks failing before any call (Attempt.Call 0)", failed)
		}
		// The first Deleter call is call 1, however many rechecks failed before it, so that
		// an adapter that writes an Event or a lateness sample on the first call never
		// misses it.
		if got := h.obs.Of(evictiontest.Started); len(got) != 1 || got[0].Attempt != 1 {
			t.Errorf("got Started %v, want only call 1", got)
		}
	})
}
