package eviction_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taintevict/taintevict/eviction"
)

// TestConfirmCountsThroughAFailingCache: a taint put on 6 of 10 nodes while the Cache fails
// (the census cannot list the nodes' pods when the nodes' updates come) is still counted
// once the Cache answers again, as the Cache's contract has every failed lookup retried:
// Confirm{Fraction: 0.5} holds the 6 pods it would evict, and deletes none. (The model test
// found it: the census counted the pods only at their own updates, which need not come.)
func TestConfirmCountsThroughAFailingCache(t *testing.T) {
	synctestRunManager(t, "confirm", func(t *testing.T) {
		var fail atomic.Bool
		h := newHarness(t, eviction.Options{})
		m, err := eviction.New(h.del, flakyCache{c: h.cache, fail: &fail}, eviction.Options{Clock: h.clk, Observer: h.obs,
			Confirm: eviction.Confirm{Fraction: 0.5}})
		if err != nil {
			t.Fatal(err)
		}
		h.m = m
		h.start()
		m.Synced() // fed live
		h.removeOnDelete()
		for i := range 10 {
			h.setNode(newNode(fmt.Sprint("n", i)))
			h.setPod(newPod(fmt.Sprint("p", i), fmt.Sprint("n", i)))
		}
		h.wait()
		fail.Store(true)
		for i := range 6 {
			h.setNode(newNode(fmt.Sprint("n", i), noExecute(unreachable, t0)))
		}
		h.wait()
		fail.Store(false)
		for range 10 {
			h.step(10 * time.Second) // the retries of the failed lookups
		}
		h.expectDeleted()
		var held int
		for _, p := range h.m.Pending() {
			if p.Delayed == eviction.ReasonUnconfirmed {
				held++
			}
		}
		if held != 6 {
			t.Errorf("held %d pods Unconfirmed, want the 6 on tainted nodes; pending %v", held, h.m.Pending())
		}
	})
}
