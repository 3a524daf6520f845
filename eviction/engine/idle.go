package engine

import (
	"context"
	"errors"

	"github.com/taintevict/taintevict/eviction/engine/internal/intake"
	"github.com/taintevict/taintevict/timedqueue"
)

// ErrStopped is returned by [Engine.WaitIdle] when Run has returned with work left: updates
// not processed, or evictions due.
var ErrStopped = errors.New("engine: Run has returned and work is left")

// WaitIdle blocks until the Engine is idle, or ctx is done, and returns nil or ctx's error.
// Idle: every update made before the call is processed, and no eviction due at the clock's
// time is queued, waiting for an act worker, or running (with the updates its call makes).
// Evictions due later are not waited for, nor those at a budget until it lets them go.
//
// It is meant for tests and simulations on a fake clock: feed updates, WaitIdle, step the
// clock, WaitIdle again. When it returns, the schedule's timer is armed for the next
// deadline, so a step right after fires exactly what is due by then.
//
// Before Run has started its schedule, it waits for Run; after Run has returned, it returns
// nil if nothing was left, and [ErrStopped] otherwise. An Actuator call that never returns
// keeps it waiting. It must not be called from this Engine's Observer or Actuator.
func (e *Engine[T]) WaitIdle(ctx context.Context) error {
	select {
	case <-e.queue.Started():
	case <-ctx.Done():
		return ctx.Err()
	}
	for {
		before, err := e.intake.WaitIdle(ctx)
		if err == nil {
			err = e.queue.WaitIdle(ctx)
		}
		var after uint64
		if err == nil {
			after, err = e.intake.WaitIdle(ctx)
		}
		switch {
		case errors.Is(err, intake.ErrStopped) || errors.Is(err, timedqueue.ErrStopped):
			return ErrStopped
		case err != nil:
			return err
		case after == before:
			return nil // no update came while the evictions ran: nothing new can be due
		}
	}
}
