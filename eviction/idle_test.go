package eviction_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// idleRig is a running Manager over an in-memory cache, without a synctest bubble: WaitIdle
// is what tells the test that the Manager is done.
type idleRig struct {
	cache *evictiontest.Cache
	m     manager
	calls atomic.Int32
}

func newIdleRig(t *testing.T, clk clock.Clock, del func(ctx context.Context, ref eviction.PodRef) error) *idleRig {
	t.Helper()
	r := &idleRig{cache: &evictiontest.Cache{}}
	d := eviction.DeleterFunc(func(ctx context.Context, ref eviction.PodRef) error {
		r.calls.Add(1)
		if del != nil {
			return del(ctx, ref)
		}
		// As the API server and the informer would: the pod goes, and the Manager is told.
		if old := r.cache.DeletePod(ref.Namespace, ref.Name); old != nil {
			r.m.PodUpdated(old, nil)
		}
		return nil
	})
	m, err := newManager(t, d, r.cache, eviction.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	r.m = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: got %v, want context.Canceled", err)
		}
	})
	return r
}

func (r *idleRig) waitIdle(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only if it hangs
	defer cancel()
	if err := r.m.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
}

// TestWaitIdleFakeClock: after WaitIdle, a fake clock stepped to a deadline fires exactly
// what is due, and the next WaitIdle returns once it has been done (removal included).
// Repeated, to give the race between a step and the arming of the queue's timer a chance.
func TestWaitIdleFakeClock(t *testing.T) {
	for i := range 100 {
		t.Run(fmt.Sprint(i), func(t *testing.T) { waitIdleFakeClock(t, i) })
	}
}

func waitIdleFakeClock(t *testing.T, i int) {
	{
		clk := testclock.NewFakeClock(t0)
		r := newIdleRig(t, clk, nil)
		n1 := newNode("n1", noExecute("a", t0))
		r.cache.SetNode(n1)
		now, later := newPod("now", "n1"), newPod("later", "n1", withTolerations(tolFor("a", 60)))
		r.cache.SetPod(now)
		r.cache.SetPod(later)
		r.m.NodeUpdated(nil, n1)
		r.waitIdle(t)
		if got := r.calls.Load(); got != 1 || r.m.Backlog() != 0 {
			t.Fatalf("run %d, after the taint: %d Deleter calls and a backlog of %d, want 1 and 0", i, got, r.m.Backlog())
		}
		if p := r.m.Pending(); len(p) != 1 || !p[0].At.Equal(t0.Add(time.Minute)) {
			t.Fatalf("run %d: got Pending %v, want later at +1m", i, p)
		}
		clk.Step(time.Minute - time.Nanosecond)
		r.waitIdle(t)
		if got := r.calls.Load(); got != 1 {
			t.Fatalf("run %d, 1 ns before the deadline: %d Deleter calls, want 1", i, got)
		}
		clk.Step(time.Nanosecond)
		r.waitIdle(t)
		if got, pending := r.calls.Load(), r.m.Pending(); got != 2 || len(pending) != 0 || r.m.Backlog() != 0 {
			t.Fatalf("run %d, at the deadline: %d Deleter calls, Pending %v, backlog %d; want 2, none, 0", i, got, pending, r.m.Backlog())
		}
	}
}

// TestWaitIdleRealClock: on the real clock, WaitIdle returns once the evictions due now
// have been done.
func TestWaitIdleRealClock(t *testing.T) {
	r := newIdleRig(t, clock.RealClock{}, nil)
	n1 := newNode("n1", noExecute("a", time.Now()))
	r.cache.SetNode(n1)
	for _, name := range []string{"a", "b", "c"} {
		p := newPod(name, "n1")
		r.cache.SetPod(p)
		r.m.PodUpdated(nil, p)
	}
	r.m.NodeUpdated(nil, n1)
	r.waitIdle(t)
	if got := r.calls.Load(); got != 3 || r.m.Backlog() != 0 || len(r.m.Pending()) != 0 {
		t.Errorf("got %d Deleter calls, backlog %d, Pending %v; want 3, 0, none", got, r.m.Backlog(), r.m.Pending())
	}
}

// TestWaitIdleContext: while a Deleter call hangs, WaitIdle waits, and returns ctx's error
// when ctx is done.
func TestWaitIdleContext(t *testing.T) {
	running, release := make(chan struct{}), make(chan struct{})
	r := newIdleRig(t, testclock.NewFakeClock(t0), func(ctx context.Context, _ eviction.PodRef) error {
		close(running)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	n1 := newNode("n1", noExecute("a", t0))
	r.cache.SetNode(n1)
	r.cache.SetPod(newPod("web", "n1"))
	r.m.NodeUpdated(nil, n1)
	<-running
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.m.WaitIdle(ctx) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("WaitIdle while the Deleter hangs: got %v, want context.Canceled", err)
	}
	close(release)
	r.waitIdle(t)
}

// TestWaitIdleAfterRun: once Run has returned, WaitIdle returns nil when nothing was left,
// and ErrStopped when an update is left that no worker will process.
func TestWaitIdleAfterRun(t *testing.T) {
	m, err := newManager(t, &evictiontest.Deleter{}, &evictiontest.Cache{}, eviction.Options{Clock: testclock.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	cancel()
	<-done
	if err := m.WaitIdle(context.Background()); err != nil {
		t.Errorf("WaitIdle after Run, nothing left: got %v, want nil", err)
	}
	m.PodUpdated(nil, newPod("web", "n1"))
	if err := m.WaitIdle(context.Background()); !errors.Is(err, eviction.ErrStopped) {
		t.Errorf("WaitIdle after Run, an update left: got %v, want ErrStopped", err)
	}
}
