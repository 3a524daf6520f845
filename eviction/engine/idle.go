package engine

import (
	"context"
	"errors"

	"github.com/taintevict/taintevict/eviction/engine/internal/intake"
	"github.com/taintevict/taintevict/timedqueue"
)

// ErrStopped is returned by [Engine.WaitIdle] when Run has returned and work is left that
// no goroutine will do: updates not processed, or evictions that are due.
var ErrStopped = errors.New("engine: Run has returned and work is left")

// WaitIdle blocks until the Engine is idle, or ctx is done, and then returns nil, or ctx's
// error. Idle means: every update made before the call has been processed, and no eviction
// that is due at the clock's current time is queued, waiting for an act worker, or running
// (its Actuator call and the updates that call makes, such as the target's removal,
// included). Evictions due later are not waited for; nor are those that wait for a
// budget: one that waits for a token or a window is not due until then, and one a budget
// holds (the brake, InFlight, Confirm, the wait for Synced) not until it is released (then it is
// due at once, and waited for).
//
// It is meant for tests and simulations on a fake clock: feed updates, call WaitIdle, step
// the clock, call WaitIdle again. When it returns, the schedule's timer is armed for
// the next deadline, so a fake clock stepped right after it fires exactly what is due by
// then. It works on the real clock too, where "due now" moves on while it waits.
//
// WaitIdle needs Run: called before Run (or before Run has started its schedule, as when
// the caller has just launched it in a goroutine), it waits for Run to start and do the
// work (give it a ctx that ends if Run may never come); after Run has returned, it returns
// nil when nothing was left, and [ErrStopped] otherwise. An Actuator call that never returns keeps
// it waiting. It is safe for concurrent use, but must not be called from an Observer or an
// Actuator of this Engine, whose work it would wait for.
func (e *Engine[T]) WaitIdle(ctx context.Context) error {
	select {
	case <-e.queue.Started():
	case <-ctx.Done():
		return ctx.Err()
	}
	for {
		before, err := e.intake.WaitIdle(ctx)
		if err != nil {
			return idleErr(err)
		}
		if err = e.queue.WaitIdle(ctx); err != nil {
			return idleErr(err)
		}
		after, err := e.intake.WaitIdle(ctx)
		if err != nil {
			return idleErr(err)
		}
		if after == before {
			return nil // no update came while the evictions ran: nothing new can be due
		}
	}
}

// idleErr returns ErrStopped for the stop of the intake or the schedule, and any other
// error as it is.
func idleErr(err error) error {
	if errors.Is(err, intake.ErrStopped) || errors.Is(err, timedqueue.ErrStopped) {
		return ErrStopped
	}
	return err
}
