package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

var (
	errRefused   = errors.New("connection refused")
	errForbidden = errors.New("forbidden")
)

// outageFleet is an Engine on a fake clock whose actuator fails every call with errRefused
// while down is set, fails the targets named in refuse with errForbidden always, and
// otherwise removes the target, as an API server would.
type outageFleet struct {
	clk  *testclock.FakeClock
	src  *evictiontest.Source
	e    *engine.Engine[engine.Target]
	down atomic.Bool

	mu     sync.Mutex
	calls  map[string][]time.Duration // since t0
	refuse map[string]bool
	block  chan error // if not nil, the next call waits for its outcome here
}

func newOutageFleet(t *testing.T, unreachable func(error) bool, refuse ...string) *outageFleet {
	f := &outageFleet{clk: testclock.NewFakeClock(t0), src: &evictiontest.Source{}, calls: map[string][]time.Duration{}, refuse: map[string]bool{}}
	for _, n := range refuse {
		f.refuse[n] = true
	}
	e, err := engine.New(engine.ActuatorFunc(f.act), engine.Source[engine.Target](f.src), engine.Options{
		Clock:       f.clk,
		Backoff:     engine.Backoff{Base: time.Second, Cap: time.Minute, Jitter: -1},
		Unreachable: unreachable,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.e = e
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: got %v, want context.Canceled", err)
		}
	})
	h := engine.Holder{Name: "node", Taints: []v1.Taint{taint("outage", t0)}}
	f.src.SetHolder(h)
	f.e.HolderUpdated(h)
	return f
}

func (f *outageFleet) act(_ context.Context, ref engine.Ref) error {
	f.mu.Lock()
	f.calls[ref.Name] = append(f.calls[ref.Name], f.clk.Since(t0))
	refused := f.refuse[ref.Name]
	block := f.block
	f.block = nil
	f.mu.Unlock()
	if block != nil {
		if err := <-block; err != nil {
			return err
		}
	}
	switch {
	case f.down.Load():
		return errRefused
	case refused:
		return errForbidden
	}
	key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	if cur, ok, _ := f.src.Target(key); ok {
		f.src.DeleteTarget(key)
		f.e.TargetDeleted(cur)
	}
	return nil
}

func (f *outageFleet) target(name string) {
	t := engine.Target{Key: types.NamespacedName{Namespace: "ns", Name: name}, UID: types.UID(name + "-1"),
		Bindings: []engine.Binding{{Holder: "node"}}}
	f.src.SetTarget(t)
	f.e.TargetUpdated(t)
}

func (f *outageFleet) callsOf(name string) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls[name])
}

func (f *outageFleet) step(d time.Duration) {
	f.clk.Step(d)
	synctest.Wait()
}

func isRefused(err error) bool { return errors.Is(err, errRefused) }

// TestRetryUnreachable: during an outage the retries back off (1 s doubling to 1 min);
// RetryUnreachable, once the backend answers again, retries at once the evictions that
// failed as unreachable and only those (one refused for its own reason keeps its backoff);
// a retry sent back that fails again waits its backoff (1 min, the cap: not started over),
// and calls in the meantime send nothing back.
func TestRetryUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newOutageFleet(t, isRefused, "bad")
		f.down.Store(true)
		f.target("web")
		f.target("bad")
		synctest.Wait()
		for range 150 {
			f.step(time.Second)
		}
		// Attempts at 0, 1, 3, 7, 15, 31, 63 and 123 s: the next waits until 183 s.
		want := []time.Duration{0, 1, 3, 7, 15, 31, 63, 123}
		for i := range want {
			want[i] *= time.Second
		}
		if got := f.callsOf("web"); !slices.Equal(got, want) {
			t.Fatalf("during the outage: got attempts at %v, want %v", got, want)
		}

		// Back, but still failing: the retry fails as unreachable and waits its backoff.
		if got := f.e.RetryUnreachable(); got != 2 {
			t.Errorf("RetryUnreachable: got %d, want 2 (both failed as unreachable)", got)
		}
		synctest.Wait()
		for range 59 {
			if got := f.e.RetryUnreachable(); got != 0 {
				t.Fatalf("RetryUnreachable after a retry sent back failed: got %d, want 0", got)
			}
			f.step(time.Second)
		}
		if got, want := f.callsOf("web")[8:], []time.Duration{150 * time.Second}; !slices.Equal(got, want) {
			t.Errorf("after a RetryUnreachable that fails again: got attempts at %v, want %v", got, want)
		}

		// Back for good: "web" goes at 210 s (150 + 1 min); "bad" fails as forbidden and
		// keeps backing off, and a call then finds nothing to retry.
		f.down.Store(false)
		f.step(time.Second)
		badBefore := len(f.callsOf("bad"))
		if got := f.e.RetryUnreachable(); got != 0 {
			t.Errorf("RetryUnreachable after recovery: got %d, want 0", got)
		}
		synctest.Wait()
		if got := len(f.callsOf("bad")); got != badBefore {
			t.Errorf("RetryUnreachable retried the forbidden eviction: %d attempts, want %d", got, badBefore)
		}
		if got := f.callsOf("web"); got[len(got)-1] != 210*time.Second {
			t.Errorf("web: got attempts at %v, want the last at 3m30s", got)
		}
		if _, ok, _ := f.src.Target(types.NamespacedName{Namespace: "ns", Name: "web"}); ok {
			t.Errorf("web not acted on once the backend was back: attempts at %v", f.callsOf("web"))
		}
	})
}

// TestRetryUnreachableFlapping: a backend that seems to come back again and again (the
// caller sees other requests answered, the Actuator's keep failing) gets one attempt sent
// back per attempt the backoff allows, not one per call: 49 calls at one instant make 2
// attempts (the first, and one sent back), not 50.
func TestRetryUnreachableFlapping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newOutageFleet(t, isRefused)
		f.down.Store(true)
		f.target("web")
		synctest.Wait()
		for range 49 {
			f.e.RetryUnreachable()
			synctest.Wait()
		}
		if got := f.callsOf("web"); len(got) != 2 || got[0] != 0 || got[1] != 0 {
			t.Errorf("got attempts at %v, want 2 at 0s", got)
		}
	})
}

// TestRetryUnreachableSendsBackAtOnce: an eviction waiting a long backoff goes as soon as
// RetryUnreachable is called, with no clock step.
func TestRetryUnreachableSendsBackAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newOutageFleet(t, isRefused)
		f.down.Store(true)
		f.target("web")
		synctest.Wait()
		for range 70 {
			f.step(time.Second) // attempts at 0, 1, 3, 7, 15, 31, 63 s; the next at 127 s
		}
		f.down.Store(false)
		if got := f.e.RetryUnreachable(); got != 1 {
			t.Fatalf("RetryUnreachable: got %d, want 1", got)
		}
		synctest.Wait()
		calls := f.callsOf("web")
		if got, want := calls[len(calls)-1], 70*time.Second; got != want {
			t.Errorf("last attempt at %v, want %v (at once)", got, want)
		}
		if _, ok, _ := f.src.Target(types.NamespacedName{Namespace: "ns", Name: "web"}); ok {
			t.Errorf("web still there after the retry")
		}
	})
}

// TestRetryUnreachableWithoutOption: without Options.Unreachable, RetryUnreachable does
// nothing and the backoff stands.
func TestRetryUnreachableWithoutOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newOutageFleet(t, nil)
		f.down.Store(true)
		f.target("web")
		synctest.Wait()
		f.step(time.Second)
		f.step(time.Second) // attempts at 0 and 1 s; the next at 3 s
		f.down.Store(false)
		if got := f.e.RetryUnreachable(); got != 0 {
			t.Errorf("RetryUnreachable: got %d, want 0", got)
		}
		synctest.Wait()
		if got, want := f.callsOf("web"), []time.Duration{0, time.Second}; !slices.Equal(got, want) {
			t.Errorf("got attempts at %v, want %v", got, want)
		}
	})
}

// TestRetryUnreachableDuringAttempt: an attempt that is under way when RetryUnreachable is
// called, and then fails as unreachable, is retried at once, not after its backoff: the
// backend answered while it ran.
func TestRetryUnreachableDuringAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newOutageFleet(t, isRefused)
		outcome := make(chan error)
		f.block = outcome
		f.target("web")
		synctest.Wait() // the first attempt waits for its outcome
		if got := f.e.RetryUnreachable(); got != 0 {
			t.Errorf("RetryUnreachable: got %d, want 0 (nothing has failed yet)", got)
		}
		f.clk.Step(time.Millisecond) // the attempt takes a while
		outcome <- errRefused
		synctest.Wait()
		if got, want := f.callsOf("web"), []time.Duration{0, time.Millisecond}; !slices.Equal(got, want) {
			t.Errorf("got attempts at %v, want %v (the retry at once)", got, want)
		}
		if _, ok, _ := f.src.Target(types.NamespacedName{Namespace: "ns", Name: "web"}); ok {
			t.Errorf("web still there after the retry")
		}
	})
}
