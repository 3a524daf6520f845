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

	"github.com/taintevict/taintevict/eviction"
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

// censusRig is a census over a Source whose stores count their reads, with n pods, each on
// a device of its own in pool p1, and objs; recounted records the scopes it told the
// engine of.
type censusRig struct {
	b         *census
	reads     atomic.Int64
	clock     *clocktesting.FakeClock
	mu        sync.Mutex
	recounted []string
}

func newCensusRig(t testing.TB, rule engine.Confirm, n int, objs ...runtime.Object) *censusRig {
	t.Helper()
	for i := range n {
		name := fmt.Sprint("pod-", i)
		objs = append(objs, claim("c-"+name, []dev{{id: fmt.Sprint("p1/d", i)}}, name), pod(name, "c-"+name))
	}
	src := newSource(t, objs...)
	r := &censusRig{clock: clocktesting.NewFakeClock(t0)}
	for _, s := range []*cache.Indexer{&src.pods, &src.claims, &src.slices, &src.rules} {
		*s = countingIndexer{Indexer: *s, reads: &r.reads}
	}
	r.b = newCensus(rule, src, r.clock, DefaultStatusPeriod, func(scope string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.recounted = append(r.recounted, scope)
	})
	return r
}

// start makes the census live as Lead does, and runs it until the test ends.
func (r *censusRig) start(t testing.TB) {
	r.b.goLive()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.b.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// held asks Reach about causes and says whether Confirm with rule would hold an eviction
// due by them, and for which scope: when each cause is held by every scope it has.
func (r *censusRig) held(rule engine.Confirm, causes []engine.Cause) (string, bool) {
	scope := ""
	for _, c := range causes {
		reach := r.b.Reach(c, nil)
		if len(reach) == 0 {
			return "", false
		}
		for _, rc := range reach {
			if rc.Confirmed || rc.Counted && !rule.Exceeds(rc.Evicts, rc.Targets) {
				return "", false
			}
		}
		if scope == "" {
			scope = reach[0].Scope
		}
	}
	return scope, scope != ""
}

// TestReachReadsNoStore: Reach, which the engine calls under its locks, reads only what
// the census keeps: no store, however many pods use devices, even when the counts are
// older than the period (the budget it replaced used to count every pod that uses a device
// there, once a period per scope, and to list and sort the rules at every call). A cause
// of a scope it has not seen come holds until it has; a confirmed rule holds nothing.
func TestReachReadsNoStore(t *testing.T) {
	bad := noExecute("bad", at(0))
	confirmed := rule("ok", device("p1", "d8"), noExecute("huge", at(0)))
	confirmed.Annotations = map[string]string{eviction.ConfirmAnnotation: "huge"}
	rl := engine.Confirm{Fraction: 0.5}
	r := newCensusRig(t, rl, 1000,
		rule("all", &resourcev1.DeviceTaintSelector{}, bad),
		rule("one", device("p1", "d7"), noExecute("ecc", at(0))),
		rule("pool", &resourcev1.DeviceTaintSelector{Pool: ptrTo("p1")}, noExecute("huge", at(0))),
		confirmed,
		slice("p1", map[string][]resourcev1.DeviceTaint{"d3": {noExecute("gone", at(0))}}))
	r.b.goLive() // run does not run: every read counted is Reach's
	cases := []struct {
		name   string
		causes []engine.Cause
		scope  string
		held   bool
	}{
		{"a rule that would evict every pod", []engine.Cause{{Holder: ID(driver, "p1", "d5"), Key: "bad", Group: driver + "/p1"}}, ruleScope("all"), true},
		{"a rule that would evict one", []engine.Cause{{Holder: ID(driver, "p1", "d7"), Key: "ecc", Group: driver + "/p1"}}, "", false},
		{"one held cause and one not", []engine.Cause{{Holder: ID(driver, "p1", "d7"), Key: "bad"}, {Holder: ID(driver, "p1", "d7"), Key: "ecc"}}, "", false},
		{"a slice's taint", []engine.Cause{{Holder: ID(driver, "p1", "d3"), Key: "gone", Group: driver + "/p1"}}, "", false},
		{"a rule that would evict every pod, and one confirmed of the same key", []engine.Cause{{Holder: ID(driver, "p1", "d8"), Key: "huge"}}, "", false},
		{"a taint the census has not seen come", []engine.Cause{{Holder: ID(driver, "p1", "d9"), Key: "new"}}, uncountedScope, true},
	}
	for _, stale := range []bool{false, true} {
		if stale {
			r.clock.SetTime(t0.Add(time.Hour)) // every count older than the period
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s, stale %v", tc.name, stale), func(t *testing.T) {
				before := r.reads.Load()
				scope, held := r.held(rl, tc.causes)
				if scope != tc.scope || held != tc.held {
					t.Errorf("got %q %v, want %q %v", scope, held, tc.scope, tc.held)
				}
				if got := r.reads.Load() - before; got != 0 {
					t.Errorf("Reach read the stores %d times, want none", got)
				}
			})
		}
	}
	if got := r.b.Reach(engine.Cause{Holder: ID(driver, "p1", "d5"), Key: "bad"}, nil); len(got) != 1 ||
		got[0] != (engine.Reach{Scope: ruleScope("all"), Evicts: 1000, Targets: 1000, Counted: true}) {
		t.Errorf("Reach of the rule all: got %+v, want 1000 of 1000 pods, counted", got)
	}
}

// TestReachHoldsUntilCounted: a scope that the census knows but has not counted (a rule
// read while it was not live) holds the eviction; run counts it when Reach asks, and tells
// the engine, since its verdict is new.
func TestReachHoldsUntilCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rl := engine.Confirm{Fraction: 0.5}
		r := newCensusRig(t, rl, 10)
		r.start(t)
		if err := r.b.src.rules.(countingIndexer).Indexer.Add(rule("late", device("p1", "d1"), noExecute("bad", at(0)))); err != nil {
			t.Fatal(err)
		}
		r.b.counting.Lock()
		r.b.read(ruleScope("late")) // as a handler does, before it counts
		r.b.counting.Unlock()
		cause := []engine.Cause{{Holder: ID(driver, "p1", "d1"), Key: "bad"}}
		if scope, held := r.held(rl, cause); scope != ruleScope("late") || !held {
			t.Fatalf("got %q %v, want the eviction held by the uncounted scope", scope, held)
		}
		synctest.Wait()
		r.mu.Lock()
		recounted := slices.Clone(r.recounted)
		r.mu.Unlock()
		if !slices.Equal(recounted, []string{ruleScope("late")}) {
			t.Errorf("got %q told, want %q", recounted, ruleScope("late"))
		}
		if scope, held := r.held(rl, cause); held {
			t.Errorf("got %q held after the count, want it to go: 1 pod of 10", scope)
		}
	})
}

// BenchmarkReach: one call of Reach with 10,000 pods on devices, all selected by a rule
// that holds; the clock moves by a period between calls, so that a census that counts when
// its counts are old counts at every call. run does not run: its recounts are off the
// engine's locks, and not what this measures.
func BenchmarkReach(b *testing.B) {
	r := newCensusRig(b, engine.Confirm{Fraction: 0.25}, 10_000,
		rule("all", &resourcev1.DeviceTaintSelector{Pool: ptrTo("p1")}, noExecute("bad", at(0))))
	r.b.goLive()
	cause := engine.Cause{Holder: ID(driver, "p1", "d5"), Key: "bad", Group: driver + "/p1"}
	into := make([]engine.Reach, 0, 4)
	b.ReportAllocs()
	for b.Loop() {
		r.clock.Step(DefaultStatusPeriod)
		if got := r.b.Reach(cause, into[:0]); len(got) != 1 || got[0].Evicts != 10_000 {
			b.Fatalf("got %+v", got)
		}
	}
}
