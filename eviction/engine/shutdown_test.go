package engine_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestUpdateLeftAtShutdownIsNoticed: an update that an event worker takes from the intake
// as Run's context ends is not processed; it is left, and WaitIdle after Run has returned
// says so with ErrStopped, rather than nil as if it had been done. One worker is in the
// middle of target a's update (its lookup stalls; a tolerates its holder's taint, and leaves
// no work) when b's update (b is due at once) is queued behind it and Run's context ends.
func TestUpdateLeftAtShutdownIsNoticed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(t0)
		src := &blockingSource{Source: &evictiontest.Source{}, entered: make(chan struct{}), release: make(chan struct{})}
		act := &actCalls{}
		e, err := engine.New(engine.ActuatorFunc(act.act), engine.Source[engine.Target](src), engine.Options{Clock: clk, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		h := engine.Holder{Name: "n", Taints: []v1.Taint{taint("down", t0)}}
		src.SetHolder(h)
		e.HolderUpdated(h)
		synctest.Wait()
		a, b := targetOn("a", "a", tolForever("down")), targetOn("b", "b") // a is never due; b is at once
		src.SetTarget(a)
		src.SetTarget(b)
		src.mu.Lock()
		src.block = "a"
		src.mu.Unlock()
		e.TargetUpdated(a)
		<-src.entered // the one worker is in a's update
		e.TargetUpdated(b)
		cancel()
		close(src.release)
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: got %v, want context.Canceled", err)
		}
		// b's update was taken and not processed, or processed and its eviction, due at
		// once, left: either way work is left that no goroutine will do.
		if err := e.WaitIdle(context.Background()); !errors.Is(err, engine.ErrStopped) {
			t.Errorf("WaitIdle after Run returned, with b's update left: got %v, want ErrStopped (pending %v, backlog %d)", err, e.Pending(), e.Backlog())
		}
	})
}
