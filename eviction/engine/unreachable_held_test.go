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

// TestUnreachableRetryHeldByBrake: RetryUnreachable's promise (each eviction gets at most
// one call more for each call its backoff allows) holds when the retry it sends back is
// held by the brake on its way: released, it starts as sent back, so its failure waits its
// backoff and is not sent back again. (A second reader found it sent back again and again.)
func TestUnreachableRetryHeldByBrake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(t0)
		src := &evictiontest.Source{}
		var mu sync.Mutex
		calls := 0
		act := func(context.Context, engine.Ref) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			return errors.New("connection refused")
		}
		e := startEngine(t, engine.ActuatorFunc(act), src, engine.Options{Clock: clk,
			Brake:       engine.Brake{Fraction: 0.5},
			Backoff:     engine.Backoff{Base: time.Hour, Cap: time.Hour, Jitter: -1},
			Unreachable: func(error) bool { return true }})
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
		a := engine.Target{Key: types.NamespacedName{Namespace: "ns", Name: "a"}, UID: "a", Bindings: []engine.Binding{{Holder: "n1"}}}
		src.SetTarget(a)
		e.TargetUpdated(a)
		e.Synced()
		set("n1", unreachableKey) // call 1, fails for want of an answer: its retry waits an hour
		synctest.Wait()
		set("n2", unreachableKey) // the brake pauses the key
		set("n3", unreachableKey)
		synctest.Wait()
		e.RetryUnreachable() // sent back, and held by the brake
		synctest.Wait()
		set("n2")
		set("n3") // resumed: call 2, the one RetryUnreachable sent back; it fails
		synctest.Wait()
		e.RetryUnreachable() // must not send it back again before its backoff: it was sent back
		synctest.Wait()
		e.RetryUnreachable()
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if calls > 2 {
			t.Errorf("within the first backoff: %d calls, want at most 2 (the first, and the one RetryUnreachable sent back)", calls)
		}
	})
}
