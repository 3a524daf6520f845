package eviction_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// plainClock hides the AfterFunc of the clock it wraps.
type plainClock struct{ clock.Clock }

// TestDeleterHangingIsTimedOut: a hanging Deleter is cancelled after DeleteTimeout and retried.
func TestDeleterHangingIsTimedOut(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff, ActTimeout: 10 * time.Second})
		first := true
		h.onDelete(func(ctx context.Context, _ eviction.PodRef) error {
			if first {
				first = false
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.setPod(newPod("web", "n1"))
		h.wait()
		h.step(10*time.Second - time.Nanosecond)
		if got := h.obs.Of(evictiontest.Failed); len(got) != 0 {
			t.Fatalf("got Failed %v before the timeout", got)
		}
		h.step(time.Nanosecond)
		failed := h.obs.Of(evictiontest.Failed)
		if len(failed) != 1 || failed[0].Attempt != 1 || !errors.Is(failed[0].Err, context.Canceled) ||
			!strings.HasPrefix(failed[0].Err.Error(), "eviction: ") || !strings.Contains(failed[0].Err.Error(), "timed out after 10s") {
			t.Fatalf("got Failed %v, want one for attempt 1 saying the call timed out after 10s", failed)
		}
		h.step(exactBackoff.Base - time.Nanosecond)
		h.expectDeleted("web@+0s")
		h.step(time.Nanosecond)
		h.expectDeleted("web@+0s", "web@+11s")
		h.expectEvents("web",
			"Scheduled default/web at +0s",
			"Started default/web (attempt 1)",
			failed[0].String(),
			"Started default/web (attempt 2)",
			"Succeeded default/web (attempt 2)",
		)
	})
}

// TestDeleteTimeoutTimersReused: each call's timeout counts from its own start and cancels
// its own call, also when its timer is one an earlier call stopped and left for reuse.
func TestDeleteTimeoutTimersReused(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff, ActTimeout: 10 * time.Second})
		var mu sync.Mutex
		var hung []string
		cancelled := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(hung) }
		h.onDelete(func(ctx context.Context, ref eviction.PodRef) error {
			if ref.Name == "first" {
				return nil // stops its timer at once
			}
			<-ctx.Done()
			mu.Lock()
			defer mu.Unlock()
			hung = append(hung, ref.Name+"@"+rel(h.clk.Now()))
			return ctx.Err()
		})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("first", "n1"))
		h.setPod(newPod("second", "n1", withTolerations(tolFor("a", 5))))
		h.setPod(newPod("third", "n1", withTolerations(tolFor("a", 7))))
		h.wait()
		h.expectDeleted("first@+0s")
		h.step(5 * time.Second) // second starts at +5s
		h.step(2 * time.Second) // third starts at +7s, while second runs
		h.step(8*time.Second - time.Nanosecond)
		if got := cancelled(); len(got) != 0 {
			t.Fatalf("calls cancelled early: %v", got)
		}
		h.step(time.Nanosecond)
		if got, want := cancelled(), []string{"second@+15s"}; !slices.Equal(got, want) {
			t.Fatalf("cancelled calls: got %v, want %v", got, want)
		}
		h.step(2 * time.Second)
		if got, want := cancelled(), []string{"second@+15s", "third@+17s"}; !slices.Equal(got, want) {
			t.Fatalf("cancelled calls: got %v, want %v", got, want)
		}
	})
}

// TestDeleteTimeoutWithoutAfterFunc: the delete timeout on a clock without AfterFunc runs on a timer and a goroutine of its own.
func TestDeleteTimeoutWithoutAfterFunc(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		// The timeout then runs on a timer and a goroutine of its own, which must end with
		// the call (goleak and the bubble check that).
		clk := newFakeClock()
		plain := plainClock{clk}
		if _, ok := clock.Clock(plain).(clock.WithDelayedExecution); ok {
			t.Fatal("plainClock must hide AfterFunc")
		}
		cache, del, obs := &evictiontest.Cache{}, &evictiontest.Deleter{}, &evictiontest.Observer{}
		calls := 0
		del.Func = func(ctx context.Context, _ eviction.PodRef) error {
			calls++
			if calls == 1 {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}
		m, err := newManager(t, del, cache, eviction.Options{Clock: plain, Observer: obs, Backoff: exactBackoff, ActTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		stop := startManager(t, m)
		defer stop()
		step := func(d time.Duration) { clk.Step(d); synctest.Wait() }
		n1 := newNode("n1", noExecute("a", t0))
		cache.SetNode(n1)
		cache.SetPod(newPod("web", "n1"))
		m.NodeUpdated(nil, n1)
		synctest.Wait()
		step(10*time.Second - time.Nanosecond)
		if got := obs.Of(evictiontest.Failed); len(got) != 0 {
			t.Fatalf("got Failed %v before the timeout", got)
		}
		step(time.Nanosecond)
		if got := obs.Of(evictiontest.Failed); len(got) != 1 || !strings.Contains(got[0].Err.Error(), "timed out after 10s") {
			t.Fatalf("got Failed %v, want one timeout", got)
		}
		step(exactBackoff.Base)
		if got := obs.Of(evictiontest.Succeeded); len(got) != 1 || got[0].Attempt != 2 {
			t.Errorf("got Succeeded %v, want attempt 2", got)
		}
	})
}

// TestDeleteTimeoutNegative: a negative DeleteTimeout does not bound the call.
func TestDeleteTimeoutNegative(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{ActTimeout: -1})
		var ctxErr error
		h.onDelete(func(ctx context.Context, _ eviction.PodRef) error {
			<-ctx.Done()
			ctxErr = ctx.Err()
			return ctxErr
		})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1"))
		h.wait()
		h.step(24 * time.Hour)
		if got := h.obs.Of(evictiontest.Failed); len(got) != 0 {
			t.Fatalf("got Failed %v, want the call still running", got)
		}
		// Stopping the Manager cancels the call, and Run waits for it.
		h.stop()
		if !errors.Is(ctxErr, context.Canceled) {
			t.Errorf("Deleter's context: got %v, want context.Canceled", ctxErr)
		}
	})
}
