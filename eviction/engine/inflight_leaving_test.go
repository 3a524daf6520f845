package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// leavingSource is an evictiontest.Source whose targets may be leaving with a time by which
// they are gone (Target.GoneBy): a pod deleted on an unreachable node, which stays
// Terminating since no kubelet confirms it, and whose deletionTimestamp (the end of its
// grace period) has passed.
type leavingSource struct {
	*evictiontest.Source

	mu     sync.Mutex
	goneBy map[types.NamespacedName]time.Time
}

// leave marks the target key leaving for reason, gone by goneBy, and returns it.
func (s *leavingSource) leave(key types.NamespacedName, reason engine.Reason, goneBy time.Time) engine.Target {
	s.mu.Lock()
	if s.goneBy == nil {
		s.goneBy = map[types.NamespacedName]time.Time{}
	}
	s.goneBy[key] = goneBy
	s.mu.Unlock()
	t, _, _ := s.Source.Target(key)
	t.Leaving = reason
	s.SetTarget(t)
	return t
}

// Describe describes t, with the time by which it is gone, if it is leaving.
func (s *leavingSource) Describe(t engine.Target, d *engine.Target) {
	s.Source.Describe(t, d)
	d.GoneBy = s.goneByOf(t.Key)
}

// goneByOf returns the time by which the leaving target key is gone; zero for none.
func (s *leavingSource) goneByOf(key types.NamespacedName) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.goneBy[key]
}

// TestInFlightOnUnreachableHolder: InFlight{Max: 2} and 6 targets due on a holder whose
// deleted targets stay leaving for good (a node that cannot confirm a pod's deletion):
// each eviction stops counting in flight once its target is leaving and its GoneBy has
// passed (for a pod, the deletionTimestamp, 30 s on), so all 6 go within bounded time, 2 at
// a time: never more than 2 in flight by that definition.
func TestInFlightOnUnreachableHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const grace = 30 * time.Second
		clk := testclock.NewFakeClock(t0)
		src := &leavingSource{Source: &evictiontest.Source{}}
		var mu sync.Mutex
		var calls []time.Time // each call's time, in order
		var goneBys []time.Time
		var e *engine.Engine[engine.Target]
		act := func(_ context.Context, ref engine.Ref) error {
			now := clk.Now()
			mu.Lock()
			calls = append(calls, now)
			goneBys = append(goneBys, now.Add(grace))
			mu.Unlock()
			e.TargetUpdated(src.leave(ref.Key(), "Terminating", now.Add(grace))) // as an informer would
			return nil
		}
		e = startEngine(t, engine.ActuatorFunc(act), src, engine.Options{Clock: clk, InFlight: engine.InFlight{Max: 2}})
		h := engine.Holder{Name: "n", Taints: []v1.Taint{taint(unreachableKey, t0)}}
		src.SetHolder(h)
		e.HolderUpdated(h)
		for i := range 6 {
			tg := targetOn(fmt.Sprint("t", i), types.UID(fmt.Sprint("t", i)))
			src.SetTarget(tg)
			e.TargetUpdated(tg)
		}
		synctest.Wait()
		for clk.Since(t0) < 10*time.Minute {
			clk.Step(5 * time.Second)
			synctest.Wait()
		}
		mu.Lock()
		defer mu.Unlock()
		var at []string
		for _, c := range calls {
			at = append(at, "+"+c.Sub(t0).String())
		}
		if len(calls) != 6 {
			t.Fatalf("in 10 minutes: %d calls (at %v), want all 6 within about 90 s (2 each 30 s)", len(calls), at)
		}
		for i, c := range calls {
			inFlight := 0
			for j := range i {
				if goneBys[j].After(c) {
					inFlight++
				}
			}
			if inFlight >= 2 {
				t.Errorf("call %d at %s: %d in flight before it (leaving and not yet gone by), want at most 1; calls at %v", i+1, at[i], inFlight, at)
			}
		}
		if last := calls[len(calls)-1]; last.Sub(t0) > 2*time.Minute {
			t.Errorf("the last call at %s, want all 6 within 2 minutes; calls at %v", at[len(at)-1], at)
		}
	})
}

// TestInFlightFractionRoomGrows: InFlight.Fraction's bound is a share of the evictions kept,
// so one that waits in line while few are kept goes as soon as more are, not at the next
// eviction that asks or ends (here an hour later). With Fraction 0.5, the second target due
// at once waits (2 kept: room for 1, taken); four more targets, due in an hour, make 6 kept
// and room for 3, and the one in line goes with the clock still at the start. (Before the
// fix it waited the hour; the what-if's and a real run's times then depended on the order
// in which the engine took the targets in.)
func TestInFlightFractionRoomGrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(t0)
		src := &evictiontest.Source{}
		var mu sync.Mutex
		var calls []string
		act := func(_ context.Context, ref engine.Ref) error {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, ref.Name+"@+"+clk.Since(t0).String())
			return nil // the targets stay: each counts in flight from here on
		}
		e := startEngine(t, engine.ActuatorFunc(act), src, engine.Options{Clock: clk, InFlight: engine.InFlight{Fraction: 0.5}})
		downHolder(src, e)
		feed := func(tg engine.Target) {
			src.SetTarget(tg)
			e.TargetUpdated(tg)
			synctest.Wait()
		}
		feed(targetOn("now-1", "u1"))
		feed(targetOn("now-2", "u2"))
		mu.Lock()
		if got := len(calls); got != 1 {
			t.Fatalf("with 2 kept: %d calls (%v), want 1", got, calls)
		}
		mu.Unlock()
		for i := range 4 {
			feed(targetOn(fmt.Sprint("later-", i), types.UID(fmt.Sprint("l", i)), tolFor("down", 3600)))
		}
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"now-1@+0s", "now-2@+0s"}; fmt.Sprint(calls) != fmt.Sprint(want) {
			t.Errorf("with 6 kept and the clock at the start: calls %v, want %v", calls, want)
		}
	})
}
