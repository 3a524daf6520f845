package engine

import (
	"context"
	"errors"
	"sync"

	"k8s.io/utils/clock"
)

// callBound is the timeout of one Actuator call: its context, and what cancels it on the
// clock: a pooled timer where the clock has AfterFunc, or a timer and a goroutine.
type callBound struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *callTimer
	t      clock.Timer
	exited chan struct{}
}

// callTimer is a timer of the pool, which saves an outage's calls several allocations each.
type callTimer struct {
	t clock.Timer
	// cancel is set before the timer is reset and read when it fires; the clock orders the
	// two, as time.Timer's Reset does.
	cancel context.CancelCauseFunc
	cause  error
}

func (t *callTimer) fire() { t.cancel(t.cause) }

// callTimers are the stopped timers of calls that ended, for the next calls.
var callTimers sync.Pool

// bound returns the bound of a call under ctx: its context is cancelled with e.timeout
// once Options.ActTimeout has passed on the clock (never, if negative).
func (e *Engine[T]) bound(ctx context.Context) callBound {
	b := callBound{}
	b.ctx, b.cancel = context.WithCancelCause(ctx)
	switch c, ok := e.clock.(clock.WithDelayedExecution); {
	case e.opts.ActTimeout < 0:
	case ok:
		if t, ok := callTimers.Get().(*callTimer); ok && t.cause == e.timeout {
			t.cancel = b.cancel
			t.t.Reset(e.opts.ActTimeout)
			b.timer = t
			break
		}
		b.timer = &callTimer{cancel: b.cancel, cause: e.timeout}
		b.timer.t = c.AfterFunc(e.opts.ActTimeout, b.timer.fire)
	default:
		b.t, b.exited = e.clock.NewTimer(e.opts.ActTimeout), make(chan struct{})
		go func() {
			defer close(b.exited)
			select {
			case <-b.t.C():
				b.cancel(e.timeout)
			case <-b.ctx.Done():
			}
		}()
	}
	return b
}

// unbound ends the bound b once its call has returned, and reports whether it fired. A
// timer that has fired, or is firing, is not kept: its function may still read cancel.
func (e *Engine[T]) unbound(b callBound) (fired bool) {
	if b.timer != nil && b.timer.t.Stop() {
		b.timer.cancel = nil
		callTimers.Put(b.timer)
	}
	if b.t != nil {
		b.t.Stop()
	}
	fired = errors.Is(context.Cause(b.ctx), e.timeout)
	b.cancel(nil)
	if b.exited != nil {
		<-b.exited
	}
	return fired
}
