package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestLoopDampingIsDeterministic: LoopDamping's jitter is drawn from the owner and its
// streak, not at each question, so that the same inputs give the same verdicts at the same
// times, run after run (and the what-if, which replays the engine, agrees with it). A
// workload's target is evicted, and a re-created one comes: at once after each eviction (a
// streak of 4), just inside the first backoff's jitter (damped or not, by the jitter), or
// near the end of the damping span (counted in the streak or not, by the jitter). Each
// scenario runs 8 times on the bubble's clock, whose timers fire at their exact times: all
// runs must act at the same times, each damped wait within the backoff less at most
// Jitter of it.
func TestLoopDampingIsDeterministic(t *testing.T) {
	const after = -1 // created right when the previous target is acted on
	for _, tc := range []struct {
		name    string
		created []time.Duration // when each target is created, from the start; after: see above
	}{
		{"a streak", []time.Duration{0, after, after, after, after}},
		{"inside the first backoff's jitter", []time.Duration{0, 9 * time.Second}},
		{"near the end of the span", []time.Duration{0, 39 * time.Second, after}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs [][]time.Duration
			for range 8 {
				synctest.Test(t, func(t *testing.T) { runs = append(runs, dampedRun(t, tc.created)) })
			}
			for i, r := range runs {
				if !slices.Equal(r, runs[0]) {
					t.Errorf("run %d acted at %v, run 1 at %v: want the same times", i+1, r, runs[0])
				}
			}
		})
	}
}

// dampedRun runs an Engine with LoopDamping{Window: 30 s} (its backoff 10 s doubling, with
// the jitter of 0.2) on the bubble's clock, over one holder tainted at the start and the
// targets of one workload, created at the offsets given (after: when the previous one is
// acted on, as a controller re-creates what it lost), each due at once. It returns when each
// was acted on, from the start, and checks that each target created when the previous one
// was acted on waited a backoff, less at most its jitter.
func dampedRun(t *testing.T, created []time.Duration) []time.Duration {
	start := time.Now()
	src := &evictiontest.Source{}
	owner := engine.Owner{Kind: "StatefulSet", Name: "web"}
	var mu sync.Mutex
	var calls []time.Duration
	var e *engine.Engine[engine.Target]
	add := func(i int) {
		tg := engine.Target{Key: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("web-", i)}, UID: types.UID(fmt.Sprint("uid-", i)),
			Owner: owner, Created: time.Now(), Bindings: []engine.Binding{{Holder: "n"}}}
		src.SetTarget(tg)
		e.TargetUpdated(tg)
	}
	act := func(_ context.Context, ref engine.Ref) error {
		if old, ok := src.DeleteTarget(ref.Key()); ok {
			e.TargetDeleted(old)
		}
		mu.Lock()
		calls = append(calls, time.Since(start))
		next := len(calls)
		mu.Unlock()
		if next < len(created) && created[next] < 0 {
			add(next)
		}
		return nil
	}
	e = startEngine(t, engine.ActuatorFunc(act), src, engine.Options{LoopDamping: engine.LoopDamping{Window: 30 * time.Second}})
	h := engine.Holder{Name: "n", Taints: []v1.Taint{taint("k", start)}}
	src.SetHolder(h)
	e.HolderUpdated(h)
	for i, at := range created {
		if at >= 0 {
			time.Sleep(start.Add(at).Sub(time.Now()))
			add(i)
		}
	}
	time.Sleep(start.Add(5 * time.Minute).Sub(time.Now()))
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != len(created) {
		t.Fatalf("acted %d times (at %v), want %d", len(calls), calls, len(created))
	}
	for i := 1; i < len(calls); i++ {
		if created[i] >= 0 {
			continue // created at a time of its own: damped or not, by its owner's span
		}
		if wait := calls[i] - calls[i-1]; !withinABackoff(wait) {
			t.Errorf("target %d waited %v after the previous eviction, want a backoff of 10 s·2^k less at most 0.2 of it", i+1, wait)
		}
	}
	return calls
}

// withinABackoff reports whether d is within [0.8·b, b] for b one of LoopDamping's default
// backoffs, 10 s doubling up to 10 minutes.
func withinABackoff(d time.Duration) bool {
	for b := 10 * time.Second; b <= 10*time.Minute; b *= 2 {
		if d >= b-b/5 && d <= b {
			return true
		}
	}
	return false
}
