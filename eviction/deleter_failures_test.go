package eviction_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

var errAPI = errors.New("apiserver unavailable")

// exactBackoff retries after 1 s, 2 s, 4 s, 8 s, then every 8 s, without jitter.
var exactBackoff = eviction.Backoff{Base: time.Second, Cap: 8 * time.Second, Jitter: -1}

// failTimes returns a Deleter function that fails its first n calls with errAPI.
func failTimes(n int) func(context.Context, eviction.PodRef) error {
	calls := 0
	return func(context.Context, eviction.PodRef) error {
		calls++
		if calls <= n {
			return fmt.Errorf("attempt %d: %w", calls, errAPI)
		}
		return nil
	}
}

// TestDeleterFailingIsRetriedWithBackoff: a failing Deleter is retried with backoff until it succeeds (kube gives up after 5 attempts, issue 140639).
func TestDeleterFailingIsRetriedWithBackoff(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		const failures = 7
		h := run(t, eviction.Options{Backoff: exactBackoff})
		h.onDelete(failTimes(failures))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1"))
		h.wait()
		want := []string{"web@+0s"}
		elapsed := time.Duration(0)
		for attempt := 1; attempt <= failures; attempt++ {
			if got := h.deleted(); !slices.Equal(got, want) {
				t.Fatalf("after %d failures: got calls %q, want %q", attempt-1, got, want)
			}
			// The eviction stays in the schedule while it waits to retry.
			h.expectPending("web@+0s")
			delay := exactBackoff.Delay(attempt)
			h.step(delay - time.Nanosecond)
			if got := len(h.calls()); got != attempt {
				t.Fatalf("retry %d came before its backoff of %v: %d calls", attempt, delay, got)
			}
			h.step(time.Nanosecond)
			elapsed += delay
			want = append(want, "web@"+rel(t0.Add(elapsed)))
			slices.Sort(want)
		}
		h.expectDeleted(want...)
		h.expectPending()
		if got := len(want); got != failures+1 {
			t.Fatalf("got %d calls, want %d", got, failures+1)
		}
		failed := h.obs.Of(evictiontest.Failed)
		if len(failed) != failures {
			t.Fatalf("got %d Failed events, want %d", len(failed), failures)
		}
		for i, e := range failed {
			if e.Attempt != i+1 {
				t.Errorf("Failed event %d: got attempt %d, want %d", i, e.Attempt, i+1)
			}
			if !errors.Is(e.Err, errAPI) || !strings.HasPrefix(e.Err.Error(), "eviction: ") {
				t.Errorf("Failed event %d: got error %q, want one wrapping %q prefixed \"eviction: \"", i, e.Err, errAPI)
			}
			if e.Pod != (eviction.PodRef{Namespace: ns, Name: "web", UID: "web-1", Holder: "n1"}) {
				t.Errorf("Failed event %d: got pod %+v", i, e.Pod)
			}
		}
		succeeded := h.obs.Of(evictiontest.Succeeded)
		if len(succeeded) != 1 || succeeded[0].Attempt != failures+1 || succeeded[0].DryRun {
			t.Errorf("got Succeeded %v, want one at attempt %d", succeeded, failures+1)
		}
		var started []int
		for _, e := range h.obs.Of(evictiontest.Started) {
			started = append(started, e.Attempt)
		}
		if want := []int{1, 2, 3, 4, 5, 6, 7, 8}; !slices.Equal(started, want) {
			t.Errorf("got Started attempts %v, want %v", started, want)
		}
		// Nothing more happens.
		h.step(time.Hour)
		if got := len(h.calls()); got != failures+1 {
			t.Errorf("got %d calls after success, want %d", got, failures+1)
		}
	})
}

// TestDeleterSaysGone: a Deleter that says the pod is gone ends the eviction as a success.
func TestDeleterSaysGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"ErrPodGone", eviction.ErrPodGone},
		{"wrapped ErrPodGone", fmt.Errorf("precondition failed: %w", eviction.ErrPodGone)},
		{"NotFound", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web")},
		{"wrapped NotFound", fmt.Errorf("delete: %w", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web"))},
	} {
		synctestRun(t, "Deleter returning "+tc.name+" succeeds", func(t *testing.T) {
			h := run(t, eviction.Options{Backoff: exactBackoff})
			h.onDelete(func(context.Context, eviction.PodRef) error { return tc.err })
			h.setNode(newNode("n1", noExecute("a", t0)))
			h.wait()
			h.setPod(newPod("web", "n1"))
			h.wait()
			h.step(time.Hour)
			h.expectDeleted("web@+0s")
			h.expectPending()
			h.expectEvents("web",
				"Scheduled default/web at +0s",
				"Started default/web (attempt 1)",
				"Succeeded default/web (attempt 1)",
			)
		})
	}
}

// TestDeleterPanicking: a panicking Deleter is reported failed, with a *PanicError, and retried.
func TestDeleterPanicking(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff})
		first := true
		h.onDelete(func(context.Context, eviction.PodRef) error {
			if first {
				first = false
				panic("boom")
			}
			return nil
		})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1"))
		h.wait()
		h.step(exactBackoff.Base)
		h.expectDeleted("web@+0s", "web@+1s")
		failed := h.obs.Of(evictiontest.Failed)
		if len(failed) != 1 || failed[0].Attempt != 1 || !strings.Contains(failed[0].Err.Error(), "boom") ||
			!strings.HasPrefix(failed[0].Err.Error(), "engine: actuator panicked: ") {
			t.Errorf("got Failed %v, want one for attempt 1 about the panic", failed)
		}
		var pe *eviction.PanicError
		if len(failed) == 1 && (!errors.As(failed[0].Err, &pe) || pe.Value != "boom" || len(pe.Stack) == 0) {
			t.Errorf("got error %#v, want an *eviction.PanicError with the value and a stack", failed[0].Err)
		}
		succeeded := h.obs.Of(evictiontest.Succeeded)
		if len(succeeded) != 1 || succeeded[0].Attempt != 2 {
			t.Errorf("got Succeeded %v, want one at attempt 2", succeeded)
		}
		// The timeout of the call that panicked was released: nothing waits on the clock.
		if n := h.clk.Waiters(); n != 0 {
			t.Errorf("got %d timers waiting on the clock, want 0", n)
		}
	})
}

// TestStopRetrying covers ways a failing eviction ends without succeeding.
func TestStopRetrying(t *testing.T) {
	for _, tc := range []struct {
		name   string
		end    func(h *harness)
		reason eviction.Reason
	}{
		{"pod deleted", func(h *harness) { h.removePod("web") }, eviction.ReasonPodDeleted},
		{"taint removed", func(h *harness) { h.setNode(newNode("n1")) }, eviction.ReasonNotTainted},
		{"node deleted", func(h *harness) { h.removeNode("n1") }, eviction.ReasonNodeDeleted},
		{"toleration added", func(h *harness) { h.setPod(newPod("web", "n1", withTolerations(tolForever("a")))) }, eviction.ReasonTolerated},
	} {
		synctestRun(t, tc.name+" while failing stops retries", func(t *testing.T) {
			h := run(t, eviction.Options{Backoff: exactBackoff})
			h.onDelete(func(context.Context, eviction.PodRef) error { return errAPI })
			h.setNode(newNode("n1", noExecute("a", t0)))
			h.setPod(newPod("web", "n1"))
			h.wait()
			h.step(time.Second)
			h.step(2 * time.Second)
			if got := len(h.calls()); got != 3 {
				t.Fatalf("got %d calls, want 3", got)
			}
			tc.end(h)
			h.wait()
			h.expectPending()
			cancelled := h.obs.Of(evictiontest.Cancelled)
			if len(cancelled) != 1 || cancelled[0].Reason != tc.reason {
				t.Errorf("got Cancelled %v, want one: %s", cancelled, tc.reason)
			}
			h.step(time.Hour)
			if got := len(h.calls()); got != 3 {
				t.Errorf("got %d calls after the eviction was cancelled, want 3", got)
			}
		})
	}

	synctestRun(t, "taint removed while the failing call runs: not retried, reported Cancelled", func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff})
		release := make(chan struct{})
		h.onDelete(func(context.Context, eviction.PodRef) error { <-release; return errAPI })
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.setPod(newPod("web", "n1"))
		h.wait()
		h.setNode(newNode("n1"))
		h.wait()
		close(release)
		h.wait()
		// Nothing is left to retry, nor to preview.
		h.expectPending()
		h.step(time.Hour)
		if got := len(h.calls()); got != 1 {
			t.Errorf("got %d calls, want 1", got)
		}
		h.expectEvents("web",
			"Scheduled default/web at +0s",
			"Started default/web (attempt 1)",
			"Cancelled default/web: NotTainted",
		)
	})

	synctestRun(t, "stopping the Manager while failing stops retries", func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff})
		h.onDelete(func(context.Context, eviction.PodRef) error { return errAPI })
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1"))
		h.wait()
		h.step(time.Second)
		h.stop()
		h.step(time.Hour)
		if got := len(h.calls()); got != 2 {
			t.Errorf("got %d calls, want 2: none after Run returned", got)
		}
		// What was pending is still there; a new Manager would start from the cache.
		h.expectPending("web@+0s")
	})
}

// TestRunningEvictionKeepsBackoff: a pod processed again while its eviction's Deleter call
// runs, and is still due, leaves that eviction alone: when the call fails, the retry waits
// for the backoff instead of starting again at once.
func TestRunningEvictionKeepsBackoff(t *testing.T) {
	synctestRun(t, "pod update during a failing call", func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff})
		release := make(chan error)
		h.onDelete(func(context.Context, eviction.PodRef) error { return <-release })
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1"))
		h.wait() // the first call runs and waits for release
		h.step(500 * time.Millisecond)
		h.setPod(newPod("web", "n1", withTolerations(tolFor("other", 60))))
		h.wait()
		release <- errAPI
		h.wait()
		if got := len(h.calls()); got != 1 {
			t.Fatalf("Deleter calls right after the failure: got %d, want 1", got)
		}
		h.onDelete(nil)
		close(release)
		h.step(exactBackoff.Base - time.Nanosecond) // the retry is due 1 s after the failure
		if got := len(h.calls()); got != 1 {
			t.Fatalf("Deleter calls before the backoff ran out: got %d, want 1", got)
		}
		h.step(time.Nanosecond)
		h.expectDeleted("web@+0s", "web@+1.5s")
	})
}
