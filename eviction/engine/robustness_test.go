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

// flakySource fails the next failTargets Target lookups, and panics in Describe while
// panics is set.
type flakySource struct {
	*evictiontest.Source
	failTargets atomic.Int32
	panics      atomic.Bool
}

func (s *flakySource) Target(key types.NamespacedName) (engine.Target, bool, error) {
	if s.failTargets.Add(-1) >= 0 {
		return engine.Target{}, false, errors.New("informer hiccup")
	}
	s.failTargets.Store(0)
	return s.Source.Target(key)
}

func (s *flakySource) Describe(t engine.Target, into *engine.Target) {
	if s.panics.Load() {
		panic("bad Source")
	}
	s.Source.Describe(t, into)
}

// actCalls is an Actuator that records the UIDs it is called for; the first call waits for
// release, when release is set, and returns firstErr.
type actCalls struct {
	mu       sync.Mutex
	uids     []types.UID
	release  chan struct{}
	firstErr error
}

func (a *actCalls) act(ctx context.Context, ref engine.Ref) error {
	a.mu.Lock()
	a.uids = append(a.uids, ref.UID)
	first := len(a.uids) == 1
	a.mu.Unlock()
	if first && a.release != nil {
		<-a.release
		return a.firstErr
	}
	return nil
}

func (a *actCalls) calls() []types.UID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.uids)
}

// startEngine runs an Engine over src with opts in the test's bubble, and stops it when the
// test ends; Run's error must be want.
func startEngine(t *testing.T, act engine.Actuator, src engine.Source[engine.Target], opts engine.Options) *engine.Engine[engine.Target] {
	t.Helper()
	e, err := engine.New(act, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: got %v, want context.Canceled", err)
		}
	})
	return e
}

func downHolder(src *evictiontest.Source, e *engine.Engine[engine.Target]) {
	h := engine.Holder{Name: "n", Taints: []v1.Taint{taint("down", t0)}}
	src.SetHolder(h)
	e.HolderUpdated(h)
}

func targetOn(name string, uid types.UID, tols ...v1.Toleration) engine.Target {
	return engine.Target{Key: types.NamespacedName{Namespace: "ns", Name: name}, UID: uid,
		Bindings: []engine.Binding{{Holder: "n", Tolerations: tols}}}
}

// TestReplacementDecidedAfterFailedLookup: a target replaced (a new UID) while the attempt
// on the old one runs is decided when that attempt ends. When the Source fails right then,
// the decision is retried after the backoff, and the replacement, due at once, is acted on.
func TestReplacementDecidedAfterFailedLookup(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"the attempt on the old one fails", errors.New("503")},
		{"the attempt on the old one succeeds", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clk := testclock.NewFakeClock(t0)
				src := &flakySource{Source: &evictiontest.Source{}}
				act := &actCalls{release: make(chan struct{}), firstErr: tc.err}
				e := startEngine(t, engine.ActuatorFunc(act.act), src, engine.Options{Clock: clk, ActTimeout: -1})
				downHolder(src.Source, e)
				old := targetOn("p", "uid-1")
				src.SetTarget(old)
				e.TargetUpdated(old)
				synctest.Wait() // the attempt on uid-1 runs, and waits
				repl := targetOn("p", "uid-2")
				src.SetTarget(repl)
				e.TargetUpdated(repl)
				synctest.Wait()
				src.failTargets.Store(1) // the lookup when the attempt ends
				close(act.release)
				synctest.Wait()
				clk.Step(time.Minute) // past the first backoff
				synctest.Wait()
				if got, want := act.calls(), []types.UID{"uid-1", "uid-2"}; !slices.Equal(got, want) {
					t.Errorf("got actuator calls %v, want %v", got, want)
				}
			})
		})
	}
}

// TestRecheckDecidesReplacement: the recheck before acting finds another UID under the key
// (the Source has the replacement; its update has not been processed): it closes the old
// eviction and decides the replacement as its update will.
func TestRecheckDecidesReplacement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(t0)
		src := &evictiontest.Source{}
		obs := &evictiontest.Observer{}
		act := &actCalls{}
		e := startEngine(t, engine.ActuatorFunc(act.act), src, engine.Options{Clock: clk, Observer: obs})
		downHolder(src, e)
		old := targetOn("p", "uid-1", tolFor("down", 60))
		src.SetTarget(old)
		e.TargetUpdated(old)
		synctest.Wait()
		src.SetTarget(targetOn("p", "uid-2")) // tolerates nothing: due at once
		clk.Step(time.Minute)
		synctest.Wait()
		if got, want := act.calls(), []types.UID{"uid-2"}; !slices.Equal(got, want) {
			t.Errorf("got actuator calls %v, want %v", got, want)
		}
		var got []string
		for _, ev := range obs.Events() {
			got = append(got, ev.String())
		}
		want := []string{
			"Scheduled ns/p at 10:01:00",
			"Cancelled ns/p: Replaced",
			"Scheduled ns/p at 10:01:00",
			"Started ns/p (attempt 1)",
			"Succeeded ns/p (attempt 1)",
		}
		if !slices.Equal(got, want) {
			t.Errorf("got reports %q, want %q", got, want)
		}
	})
}

// TestFailedRecheckKeepsItsToken: an eviction that waited for a token of the rate limit,
// and whose recheck then fails, keeps its place at the gate: it is not reported Delayed
// again, and its retry goes with the token it waited for.
func TestFailedRecheckKeepsItsToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(t0)
		src := &flakySource{Source: &evictiontest.Source{}}
		obs := &evictiontest.Observer{}
		act := &actCalls{}
		e := startEngine(t, engine.ActuatorFunc(act.act), src, engine.Options{Clock: clk, Observer: obs,
			RateLimit: engine.Limit{PerSecond: 1, Burst: 1}, Backoff: engine.Backoff{Base: 100 * time.Millisecond, Jitter: -1}})
		downHolder(src.Source, e)
		for _, n := range []string{"a", "b"} {
			tg := targetOn(n, types.UID(n))
			src.SetTarget(tg)
			e.TargetUpdated(tg)
			synctest.Wait()
		}
		src.failTargets.Store(1) // b's recheck when its token comes
		for range 20 {
			clk.Step(100 * time.Millisecond)
			synctest.Wait()
		}
		var got []string
		for _, ev := range obs.Events() {
			if ev.Pod.Name == "b" {
				got = append(got, ev.String())
			}
		}
		want := []string{
			"Scheduled ns/b at 10:00:00",
			"Delayed ns/b: RateLimited",
			`Failed ns/b (before a call): engine: recheck target ns/b: informer hiccup`,
			"Started ns/b (attempt 1)",
			"Succeeded ns/b (attempt 1)",
		}
		if !slices.Equal(got, want) {
			t.Errorf("got reports of b %q, want %q", got, want)
		}
		if got, want := act.calls(), []types.UID{"a", "b"}; !slices.Equal(got, want) {
			t.Errorf("got actuator calls %v, want %v", got, want)
		}
	})
}

// panicky is an Observer whose Started panics.
type panicky struct{ engine.NopObserver }

func (panicky) Started(engine.Ref, engine.Attempt) { panic("bad Observer") }

// TestWorkerPanicStopsRun: a Source or Observer method that panics in one of the Engine's
// workers stops it: Run returns the panic as a *PanicError, and every goroutine it started
// ends (the test's bubble and goleak check that).
func TestWorkerPanicStopsRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		obs  engine.Observer
		// breakSource makes the Source panic from then on.
		breakSource bool
	}{
		{name: "Observer.Started, in an act worker", obs: panicky{}},
		{name: "Source.Describe, in an event worker", breakSource: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clk := testclock.NewFakeClock(t0)
				src := &flakySource{Source: &evictiontest.Source{}}
				e, err := engine.New(engine.ActuatorFunc((&actCalls{}).act), engine.Source[engine.Target](src), engine.Options{Clock: clk, Observer: tc.obs})
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- e.Run(context.Background()) }()
				downHolder(src.Source, e)
				synctest.Wait()
				src.panics.Store(tc.breakSource)
				tg := targetOn("p", "u")
				src.SetTarget(tg)
				e.TargetUpdated(tg)
				synctest.Wait()
				select {
				case err := <-done:
					var pe *engine.PanicError
					if !errors.As(err, &pe) || pe.In != "a worker" || len(pe.Stack) == 0 {
						t.Fatalf("Run: got %#v, want a *PanicError from a worker, with its stack", err)
					}
					if want := "engine: a worker panicked: bad "; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
						t.Errorf("got error %q, want it to start %q", err, want)
					}
				default:
					t.Fatal("Run did not return after the panic")
				}
			})
		})
	}
}

// TestFailuresCountSaturates: the count of consecutive failures, which picks the backoff,
// stops at its maximum rather than wrap around to the first failure's short delay.
func TestFailuresCountSaturates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(t0)
		src := &evictiontest.Source{}
		var attempts atomic.Int64
		act := engine.ActuatorFunc(func(context.Context, engine.Ref) error {
			attempts.Add(1)
			return errors.New("429: a PodDisruptionBudget")
		})
		e := startEngine(t, act, src, engine.Options{Clock: clk, ActWorkers: 1,
			Backoff: engine.Backoff{Base: time.Millisecond, Cap: time.Second, Jitter: -1}})
		downHolder(src, e)
		tg := targetOn("p", "u")
		src.SetTarget(tg)
		e.TargetUpdated(tg)
		synctest.Wait()
		for range 32800 { // more failures than an int16 counts
			clk.Step(time.Second)
			synctest.Wait()
		}
		before := attempts.Load()
		for range 1000 { // one more second, a millisecond at a time
			clk.Step(time.Millisecond)
			synctest.Wait()
		}
		if n := attempts.Load() - before; n > 1 {
			t.Errorf("got %d attempts in a second after %d failures, want at most 1 (Backoff.Cap 1s)", n, before)
		}
	})
}
