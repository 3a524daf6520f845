package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestHeldRetryGivesBackItsPlaceInFlight: a retry that the brake holds gives back its
// InFlight place, its call having done nothing (refused): with InFlight{Max: 1}, a target
// due because of a key the brake does not pause goes, while the brake holds the other key,
// which in a partition is for good. (A second reader found it: the held retry kept its
// place, and the other waited for good.)
func TestHeldRetryGivesBackItsPlaceInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(t0)
		src := &evictiontest.Source{}
		var mu sync.Mutex
		refuseA := true
		var e *engine.Engine[engine.Target]
		var called []string
		act := func(_ context.Context, ref engine.Ref) error {
			mu.Lock()
			defer mu.Unlock()
			called = append(called, ref.Name)
			if ref.Name == "a" && refuseA {
				refuseA = false
				return errors.New("refused") // nothing was done
			}
			if t, ok := src.DeleteTarget(ref.Key()); ok { // the API server deletes it at once
				e.TargetDeleted(t) // as an informer would; the Actuator may call the update methods
			}
			return nil
		}
		e = startEngine(t, engine.ActuatorFunc(act), src, engine.Options{Clock: clk,
			Brake: engine.Brake{Fraction: 0.5}, InFlight: engine.InFlight{Max: 1}})
		set := func(name string, keys ...string) {
			h := engine.Holder{Name: name}
			for _, k := range keys {
				h.Taints = append(h.Taints, taint(k, t0))
			}
			src.SetHolder(h)
			e.HolderUpdated(h)
		}
		for _, n := range []string{"n1", "n2", "n3", "n4"} {
			set(n)
		}
		on := func(name, holder string) engine.Target {
			return engine.Target{Key: types.NamespacedName{Namespace: "ns", Name: name}, UID: types.UID(name),
				Bindings: []engine.Binding{{Holder: holder}}}
		}
		a := on("a", "n1")
		src.SetTarget(a)
		e.TargetUpdated(a)
		e.Synced()
		set("n1", unreachableKey) // 1 of 4: not paused; a is due, let go, and its call is refused
		synctest.Wait()
		set("n2", unreachableKey) // 3 of 4 now: the brake pauses the key, and holds a's retry
		set("n3", unreachableKey)
		synctest.Wait()
		b := on("b", "n4")
		src.SetTarget(b)
		e.TargetUpdated(b)
		set("n4", "example.com/maintenance") // 1 of 4: the brake does not pause it
		synctest.Wait()
		for range 60 {
			clk.Step(time.Minute)
			synctest.Wait()
		}
		mu.Lock()
		defer mu.Unlock()
		for _, n := range called {
			if n == "b" {
				return
			}
		}
		t.Errorf("after an hour: calls %v, want b acted on: nothing is on its way out (a's one call was refused), "+
			"and the brake does not pause b's key; stats %+v, pending %v", called, e.Stats(), e.Pending())
	})
}
