package device

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
)

// countingIndexer counts the reads of a store.
type countingIndexer struct {
	cache.Indexer
	reads *atomic.Int64
}

func (c countingIndexer) List() []any { c.reads.Add(1); return c.Indexer.List() }
func (c countingIndexer) GetByKey(key string) (any, bool, error) {
	c.reads.Add(1)
	return c.Indexer.GetByKey(key)
}
func (c countingIndexer) ByIndex(name, value string) ([]any, error) {
	c.reads.Add(1)
	return c.Indexer.ByIndex(name, value)
}
func (c countingIndexer) IndexKeys(name, value string) ([]string, error) {
	c.reads.Add(1)
	return c.Indexer.IndexKeys(name, value)
}
func (c countingIndexer) ListIndexFuncValues(name string) []string {
	c.reads.Add(1)
	return c.Indexer.ListIndexFuncValues(name)
}

// budgetRig is a budget over a Source whose stores count their reads, with n pods, each on
// a device of its own in pool p1, and objs; resumed records the scopes it resumed.
type budgetRig struct {
	b       *budget
	reads   atomic.Int64
	clock   *clocktesting.FakeClock
	mu      sync.Mutex
	resumed []string
}

func newBudgetRig(t testing.TB, b Budget, n int, objs ...runtime.Object) *budgetRig {
	t.Helper()
	for i := range n {
		name := fmt.Sprint("pod-", i)
		objs = append(objs, claim("c-"+name, []dev{{id: fmt.Sprint("p1/d", i)}}, name), pod(name, "c-"+name))
	}
	src := newSource(t, objs...)
	r := &budgetRig{clock: clocktesting.NewFakeClock(t0)}
	for _, s := range []*cache.Indexer{&src.pods, &src.claims, &src.slices, &src.rules} {
		*s = countingIndexer{Indexer: *s, reads: &r.reads}
	}
	r.b = newBudget(b, src, r.clock, DefaultStatusPeriod, func(scope string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.resumed = append(r.resumed, scope)
	})
	return r
}

// start makes the budget live as Lead does, and runs it until the test ends.
func (r *budgetRig) start(t testing.TB) {
	r.b.goLive()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.b.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestPausedReadsNoStore: Paused, which the engine calls under its locks, reads only what
// the budget keeps: no store, however many pods use devices, even when the verdicts are
// older than the period (the budget used to count every pod that uses a device there,
// once a period per scope, and to list and sort the rules at every call). It holds an
// eviction due by a scope it has not counted until run has counted it, then resumes it.
func TestPausedReadsNoStore(t *testing.T) {
	bad := noExecute("bad", at(0))
	r := newBudgetRig(t, Budget{Fraction: 0.5}, 1000,
		rule("all", &resourcev1.DeviceTaintSelector{}, bad),
		rule("one", device("p1", "d7"), noExecute("ecc", at(0))),
		slice("p1", map[string][]resourcev1.DeviceTaint{"d3": {noExecute("gone", at(0))}}))
	r.b.goLive() // run does not run: every read counted is Paused's
	cases := []struct {
		name   string
		causes []engine.Cause
		scope  string
		paused bool
	}{
		{"a rule that would evict every pod", []engine.Cause{{Holder: ID(driver, "p1", "d5"), Key: "bad", Group: driver + "/p1"}}, ruleScope("all"), true},
		{"a rule that would evict one", []engine.Cause{{Holder: ID(driver, "p1", "d7"), Key: "ecc", Group: driver + "/p1"}}, "", false},
		{"one paused cause and one not", []engine.Cause{{Holder: ID(driver, "p1", "d7"), Key: "bad"}, {Holder: ID(driver, "p1", "d7"), Key: "ecc"}}, "", false},
		{"a slice's taint", []engine.Cause{{Holder: ID(driver, "p1", "d3"), Key: "gone", Group: driver + "/p1"}}, "", false},
		{"a taint the budget has not seen come", []engine.Cause{{Holder: ID(driver, "p1", "d9"), Key: "new"}}, uncountedScope, true},
	}
	for _, stale := range []bool{false, true} {
		if stale {
			r.clock.SetTime(t0.Add(time.Hour)) // every verdict older than the period
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s, stale %v", tc.name, stale), func(t *testing.T) {
				before := r.reads.Load()
				scope, paused := r.b.Paused(engine.Ref{}, tc.causes)
				if scope != tc.scope || paused != tc.paused {
					t.Errorf("got %q %v, want %q %v", scope, paused, tc.scope, tc.paused)
				}
				if got := r.reads.Load() - before; got != 0 {
					t.Errorf("Paused read the stores %d times, want none", got)
				}
			})
		}
	}
}

// TestPausedHoldsUntilCounted: a scope that the budget knows but has not counted (a rule
// read while the budget was not live) holds the eviction; run counts it when Paused asks,
// and resumes it, since it does not pause.
func TestPausedHoldsUntilCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newBudgetRig(t, Budget{Fraction: 0.5}, 10)
		r.start(t)
		if err := r.b.src.rules.(countingIndexer).Indexer.Add(rule("late", device("p1", "d1"), noExecute("bad", at(0)))); err != nil {
			t.Fatal(err)
		}
		r.b.counting.Lock()
		r.b.read(ruleScope("late")) // as a handler does, before it counts
		r.b.counting.Unlock()
		cause := []engine.Cause{{Holder: ID(driver, "p1", "d1"), Key: "bad"}}
		if scope, paused := r.b.Paused(engine.Ref{}, cause); scope != ruleScope("late") || !paused {
			t.Fatalf("got %q %v, want the eviction held by the uncounted scope", scope, paused)
		}
		synctest.Wait()
		r.mu.Lock()
		resumed := slices.Clone(r.resumed)
		r.mu.Unlock()
		if !slices.Equal(resumed, []string{ruleScope("late")}) {
			t.Errorf("got %q resumed, want %q", resumed, ruleScope("late"))
		}
		if scope, paused := r.b.Paused(engine.Ref{}, cause); paused {
			t.Errorf("got %q paused after the count, want it to go: 1 pod of 10", scope)
		}
	})
}

// BenchmarkPaused: one call of Paused with 10,000 pods on devices, all selected by a rule
// that pauses; the clock moves by a period between calls, so that a budget that counts when
// its verdicts are old counts at every call. run does not run: its recounts are off the
// engine's locks, and not what this measures.
func BenchmarkPaused(b *testing.B) {
	r := newBudgetRig(b, Budget{Fraction: 0.25}, 10_000,
		rule("all", &resourcev1.DeviceTaintSelector{Pool: ptrTo("p1")}, noExecute("bad", at(0))))
	r.b.goLive()
	cause := []engine.Cause{{Holder: ID(driver, "p1", "d5"), Key: "bad", Group: driver + "/p1"}}
	b.ReportAllocs()
	for b.Loop() {
		r.clock.Step(DefaultStatusPeriod)
		if _, paused := r.b.Paused(engine.Ref{}, cause); !paused {
			b.Fatal("not paused")
		}
	}
}
