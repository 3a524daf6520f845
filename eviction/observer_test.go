package eviction_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestObserverEvents checks every kind of event, with the pod it names and the deadline it
// gives exactly.
func TestObserverEvents(t *testing.T) {
	synctestRun(t, "every kind", func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff})
		failOnce := failTimes(1)
		h.onDelete(func(ctx context.Context, ref eviction.PodRef) error {
			if ref.Name == "flaky" {
				return failOnce(ctx, ref)
			}
			return nil
		})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setNode(newNode("n2", noExecute("a", t0)))
		// Each pod is then processed once, by its own update.
		h.wait()
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 60))))   // deleted at its deadline
		h.setPod(newPod("flaky", "n2"))                                   // fails once, then succeeds
		h.setPod(newPod("db", "n1", withTolerations(tolFor("a", 600))))   // cancelled
		h.setPod(newPod("done", "n2", withTolerations(tolFor("a", 600)))) // finishes: skipped
		h.setPod(newPod("calm", "n1", withTolerations(tolForever("a"))))  // nothing
		h.wait()
		h.setPod(newPod("db", "n1", withTolerations(tolForever("a"))))
		h.setPod(newPod("done", "n2", withTolerations(tolFor("a", 600)), inPhase("Succeeded")))
		h.wait()
		h.stepTo(time.Second)
		h.stepTo(time.Minute)

		web := eviction.PodRef{Namespace: ns, Name: "web", UID: "web-1", Holder: "n1"}
		flaky := eviction.PodRef{Namespace: ns, Name: "flaky", UID: "flaky-1", Holder: "n2"}
		db := eviction.PodRef{Namespace: ns, Name: "db", UID: "db-1", Holder: "n1"}
		done := eviction.PodRef{Namespace: ns, Name: "done", UID: "done-1", Holder: "n2"}
		byPod := map[string][]evictiontest.Event{}
		for _, e := range h.obs.Events() {
			if e.Kind == evictiontest.Failed {
				require.Error(t, e.Err)
				assert.ErrorIs(t, e.Err, errAPI)
				assert.Regexp(t, `^eviction: delete pod default/flaky: attempt 1: apiserver unavailable$`, e.Err.Error())
				e.Err = nil
			}
			byPod[e.Pod.Name] = append(byPod[e.Pod.Name], e)
		}
		assert.Equal(t, []evictiontest.Event{
			{Kind: evictiontest.Scheduled, Pod: web, At: t0.Add(time.Minute)},
			{Kind: evictiontest.Started, Pod: web, At: t0.Add(time.Minute), Attempt: 1},
			{Kind: evictiontest.Succeeded, Pod: web, At: t0.Add(time.Minute), Attempt: 1},
		}, byPod["web"])
		assert.Equal(t, []evictiontest.Event{
			{Kind: evictiontest.Scheduled, Pod: flaky, At: t0},
			{Kind: evictiontest.Started, Pod: flaky, At: t0, Attempt: 1},
			{Kind: evictiontest.Failed, Pod: flaky, Attempt: 1},
			{Kind: evictiontest.Started, Pod: flaky, At: t0, Attempt: 2}, // a retry keeps its deadline
			{Kind: evictiontest.Succeeded, Pod: flaky, At: t0, Attempt: 2},
		}, byPod["flaky"])
		assert.Equal(t, []evictiontest.Event{
			{Kind: evictiontest.Scheduled, Pod: db, At: t0.Add(10 * time.Minute)},
			{Kind: evictiontest.Cancelled, Pod: db, Reason: eviction.ReasonTolerated},
		}, byPod["db"])
		assert.Equal(t, []evictiontest.Event{
			{Kind: evictiontest.Scheduled, Pod: done, At: t0.Add(10 * time.Minute)},
			{Kind: evictiontest.Skipped, Pod: done, Reason: eviction.ReasonPodFinished},
		}, byPod["done"])
		assert.Empty(t, byPod["calm"])
		assert.Len(t, byPod, 4)
	})
}

// TestPending checks the schedule's preview: earliest first, with pod, node and deadline.
func TestPending(t *testing.T) {
	synctestRun(t, "earliest first", func(t *testing.T) {
		h := run(t, eviction.Options{})
		assert.Empty(t, pendingUTC(h.m))
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setNode(newNode("n2", noExecute("a", t0.Add(-time.Minute))))
		h.setPod(newPod("c", "n1", withTolerations(tolFor("a", 300))))
		h.setPod(newPod("a", "n2", withTolerations(tolFor("a", 120))))
		h.setPod(newPod("b", "n1", withTolerations(tolFor("a", 200))))
		h.setPod(newPod("d", "n2", withTolerations(tolForever("a"))))
		h.wait()
		want := []eviction.Pending{
			{Target: eviction.PodRef{Namespace: ns, Name: "a", UID: "a-1", Holder: "n2"}, At: t0.Add(time.Minute)},
			{Target: eviction.PodRef{Namespace: ns, Name: "b", UID: "b-1", Holder: "n1"}, At: t0.Add(200 * time.Second)},
			{Target: eviction.PodRef{Namespace: ns, Name: "c", UID: "c-1", Holder: "n1"}, At: t0.Add(300 * time.Second)},
		}
		assert.Equal(t, want, pendingUTC(h.m))
		h.stepTo(time.Minute)
		assert.Equal(t, want[1:], pendingUTC(h.m))
		// A moved deadline moves the pod in the list.
		h.setPod(newPod("c", "n1", withTolerations(tolFor("a", 100))))
		h.wait()
		assert.Equal(t, []eviction.Pending{
			{Target: want[2].Target, At: t0.Add(100 * time.Second)},
			want[1],
		}, pendingUTC(h.m))
	})

	synctestRun(t, "running eviction is not listed", func(t *testing.T) {
		h := run(t, eviction.Options{})
		release := make(chan struct{})
		h.onDelete(func(context.Context, eviction.PodRef) error { <-release; return nil })
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1"))
		h.wait()
		require.Len(t, h.calls(), 1)
		assert.Empty(t, h.m.Pending())
		close(release)
		h.wait()
		assert.Empty(t, h.m.Pending())
	})

	synctestRun(t, "failing eviction stays listed at its first time", func(t *testing.T) {
		h := run(t, eviction.Options{Backoff: exactBackoff})
		h.onDelete(func(context.Context, eviction.PodRef) error { return errAPI })
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1"))
		h.wait()
		h.step(3 * time.Second)
		assert.Equal(t, []eviction.Pending{{Target: eviction.PodRef{Namespace: ns, Name: "web", UID: "web-1", Holder: "n1"}, At: t0}}, pendingUTC(h.m))
	})
}

// TestDryRun checks that dry-run mode calls no Deleter and reports what it would do.
func TestDryRun(t *testing.T) {
	synctestRun(t, "nil Deleter", func(t *testing.T) {
		h := run(t, eviction.Options{DryRun: true})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.setPod(newPod("web", "n1"))
		h.setPod(newPod("api", "n1", withTolerations(tolFor("a", 60))))
		h.setPod(newPod("done", "n1", inPhase("Failed")))
		h.wait()
		h.stepTo(time.Minute)
		h.expectDeleted()
		h.expectPending()
		h.expectEvents("web", "Scheduled default/web at +0s", "Succeeded default/web (dry run)")
		h.expectEvents("api", "Scheduled default/api at +1m0s", "Succeeded default/api (dry run)")
		h.expectEvents("done") // finished, with no open eviction: not reported
		assert.Empty(t, h.obs.Of(evictiontest.Started))
		// The recheck still applies in dry-run mode.
		h.setPod(newPod("late", "n1", withTolerations(tolFor("a", 120))))
		h.wait()
		h.cache.SetNode(newNode("n1"))
		h.stepTo(2 * time.Minute)
		h.expectEvents("late", "Scheduled default/late at +2m0s", "Cancelled default/late: NotTainted")
	})

	synctestRun(t, "a Deleter given is not called", func(t *testing.T) {
		cache := &evictiontest.Cache{}
		del := &evictiontest.Deleter{}
		obs := &evictiontest.Observer{}
		m, err := newManager(t, del, cache, eviction.Options{DryRun: true, Observer: obs, Clock: newFakeClock()})
		require.NoError(t, err)
		stop := startManager(t, m)
		defer stop()
		n1 := newNode("n1", noExecute("a", t0))
		web := newPod("web", "n1")
		cache.SetNode(n1)
		m.NodeUpdated(nil, n1)
		synctest.Wait()
		cache.SetPod(web)
		m.PodUpdated(nil, web)
		synctest.Wait()
		stop()
		assert.Zero(t, del.Count())
		succeeded := obs.Of(evictiontest.Succeeded)
		require.Len(t, succeeded, 1)
		assert.True(t, succeeded[0].DryRun)
	})
}

// countingObserver implements only Succeeded, embedding NopObserver for the rest.
type countingObserver struct {
	eviction.NopObserver
	n atomic.Int32
}

func (o *countingObserver) Succeeded(eviction.PodRef, eviction.Attempt, bool) { o.n.Add(1) }

// TestNoObserver runs without an Observer, and with one that implements only a method.
func TestNoObserver(t *testing.T) {
	synctestRun(t, "nil Observer", func(t *testing.T) {
		cache := &evictiontest.Cache{}
		del := &evictiontest.Deleter{}
		m, err := newManager(t, del, cache, eviction.Options{Clock: newFakeClock()})
		require.NoError(t, err)
		stop := startManager(t, m)
		n1 := newNode("n1", noExecute("a", t0))
		cache.SetNode(n1)
		cache.SetPod(newPod("web", "n1"))
		m.NodeUpdated(nil, n1)
		synctest.Wait()
		stop()
		assert.Equal(t, 1, del.Count())
	})

	synctestRun(t, "embedded NopObserver", func(t *testing.T) {
		obs := &countingObserver{}
		h := run(t, eviction.Options{Observer: obs})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1"))
		h.setPod(newPod("api", "n1"))
		h.wait()
		assert.EqualValues(t, 2, obs.n.Load())
	})
}

// TestIsGone checks which errors count as "the pod is already gone".
func TestIsGone(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web")
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errAPI, false},
		{eviction.ErrPodGone, true},
		{fmt.Errorf("uid precondition: %w", eviction.ErrPodGone), true},
		{notFound, true},
		{fmt.Errorf("delete: %w", notFound), true},
		{apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web", errors.New("uid mismatch")), false},
		{apierrors.NewTooManyRequests("pdb", 1), false},
		{context.DeadlineExceeded, false},
	} {
		if got := engine.IsGone(tc.err); got != tc.want {
			t.Errorf("IsGone(%v): got %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestDeleterFunc checks the adapter and PodRef.String.
func TestDeleterFunc(t *testing.T) {
	var got eviction.PodRef
	d := eviction.DeleterFunc(func(_ context.Context, ref eviction.PodRef) error { got = ref; return errAPI })
	ref := eviction.PodRef{Namespace: "ns", Name: "web", UID: "u", Holder: "n1"}
	if err := d.Delete(context.Background(), ref); !errors.Is(err, errAPI) {
		t.Errorf("Delete: got %v, want %v", err, errAPI)
	}
	if got != ref {
		t.Errorf("got %+v, want %+v", got, ref)
	}
	if s := ref.String(); s != "ns/web" {
		t.Errorf("String: got %q, want %q", s, "ns/web")
	}
}
