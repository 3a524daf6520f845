package engine_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// keyFailingSource is an evictiontest.Source whose lookups of the targets named fail.
type keyFailingSource struct {
	*evictiontest.Source

	mu   sync.Mutex
	fail map[string]bool
}

func (s *keyFailingSource) setFailing(name string, fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail == nil {
		s.fail = map[string]bool{}
	}
	s.fail[name] = fail
}

func (s *keyFailingSource) Target(key types.NamespacedName) (engine.Target, bool, error) {
	s.mu.Lock()
	fail := s.fail[key.Name]
	s.mu.Unlock()
	if fail {
		return engine.Target{}, false, errors.New("informer hiccup")
	}
	return s.Source.Target(key)
}

// TestStatsOfAFailedRecheck: an eviction held at a budget whose recheck then fails (its
// Source lookup) waits to retry, and counts as Retrying only, not as Delayed too: Stats
// agrees with Pending, Stats().Pending() == len(Pending()) and Delayed by reason, as the
// Observer's contract promises whenever the Engine is idle. Two targets are due at once;
// the budget lets a go and holds b; when b is asked again, its lookup fails.
func TestStatsOfAFailedRecheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts engine.Options
		// askAgain has the Engine ask the budgets about b again, with a acted on.
		askAgain func(clk *testclock.FakeClock, src *keyFailingSource, e *engine.Engine[engine.Target])
	}{
		{"RateLimit", engine.Options{RateLimit: engine.Limit{PerSecond: 1, Burst: 1}},
			func(clk *testclock.FakeClock, _ *keyFailingSource, _ *engine.Engine[engine.Target]) {
				clk.Step(time.Second)
			}},
		{"NamespaceLimit", engine.Options{NamespaceLimit: engine.Window{Max: 1, Per: 10 * time.Second}},
			func(clk *testclock.FakeClock, _ *keyFailingSource, _ *engine.Engine[engine.Target]) {
				clk.Step(10 * time.Second)
			}},
		{"InFlight", engine.Options{InFlight: engine.InFlight{Max: 1}},
			func(_ *testclock.FakeClock, src *keyFailingSource, e *engine.Engine[engine.Target]) {
				if old, ok := src.DeleteTarget(types.NamespacedName{Namespace: "ns", Name: "a"}); ok {
					e.TargetDeleted(old) // a is gone: its place in flight goes to b
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clk := testclock.NewFakeClock(t0)
				src := &keyFailingSource{Source: &evictiontest.Source{}}
				obs := &evictiontest.Observer{}
				act := &actCalls{} // acts, and leaves the target in the Source
				opts := tc.opts
				opts.Clock, opts.Observer, opts.Backoff = clk, obs, engine.Backoff{Base: time.Minute, Jitter: -1}
				e := startEngine(t, engine.ActuatorFunc(act.act), src, opts)
				downHolder(src.Source, e)
				for _, n := range []string{"a", "b"} {
					tg := targetOn(n, types.UID(n))
					src.SetTarget(tg)
					e.TargetUpdated(tg)
					synctest.Wait()
				}
				if p := e.Pending(); len(p) != 1 || p[0].Target.Name != "b" || p[0].Delayed == "" {
					t.Fatalf("before: pending %v, want b held at the budget", p)
				}
				src.setFailing("b", true)
				tc.askAgain(clk, src, e)
				synctest.Wait()
				var failed bool
				for _, ev := range obs.Events() {
					failed = failed || ev.Kind == evictiontest.Failed && ev.Pod.Name == "b" && ev.Attempt == 0 && strings.Contains(ev.Err.Error(), "informer hiccup")
				}
				if !failed {
					t.Fatalf("b's recheck did not fail: events %v", obs.Events())
				}
				s, pending := e.Stats(), e.Pending()
				if s.Pending() != len(pending) {
					t.Errorf("Stats().Pending() = %d (%+v), len(Pending()) = %d (%v): want them equal", s.Pending(), s, len(pending), pending)
				}
				delayed := map[engine.Reason]int{}
				for _, p := range pending {
					if p.Delayed != "" {
						delayed[p.Delayed]++
					}
				}
				for r, n := range s.Delayed {
					if n != delayed[r] {
						t.Errorf("Stats().Delayed[%s] = %d, Pending() lists %d so: want them equal", r, n, delayed[r])
					}
				}
				if s.Retrying != 1 || s.Pending() != 1 {
					t.Errorf("Stats %+v: want b as Retrying only (Retrying 1, nothing Delayed)", s)
				}
				src.setFailing("b", false)
				clk.Step(time.Minute) // b's retry
				synctest.Wait()
				if got := act.calls(); len(got) != 2 || got[1] != "b" {
					t.Errorf("acted on %v, want a, then b once its lookup works", got)
				}
				if s := e.Stats(); s.Pending() != 0 {
					t.Errorf("after b's retry: Stats %+v, want nothing pending", s)
				}
			})
		})
	}
}
