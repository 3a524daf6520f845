package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// callActuator calls the Actuator with a context bounded by Options.ActTimeout and returns
// its error: wrapped with the timeout when that fired, and as a *PanicError when the
// actuator panicked, so that it is reported and retried like any other failure. The timeout
// is released either way.
func (e *Engine[T]) callActuator(ctx context.Context, ref Ref) (err error) {
	actx, bound := e.withActTimeout(ctx)
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
		if bound.stop() && err != nil && !errors.Is(err, ErrActTimeout) {
			err = fmt.Errorf("%w: %w", e.timeout, err)
		}
	}()
	return e.act.Act(actx, ref)
}

// withActTimeout returns a context for one Actuator call, cancelled after
// Options.ActTimeout on the Engine's clock, and the bound to stop once the call has
// returned. No goroutine of it outlives stop.
func (e *Engine[T]) withActTimeout(ctx context.Context) (context.Context, actBound) {
	ctx, cancel := context.WithCancelCause(ctx)
	b := actBound{ctx: ctx, cancel: cancel}
	if e.opts.ActTimeout < 0 {
		return ctx, b
	}
	if c, ok := e.clock.(clock.WithDelayedExecution); ok {
		b.timers = &e.actTimers
		b.timer = b.timers.arm(c, e.opts.ActTimeout, cancel)
		return ctx, b
	}
	t := e.clock.NewTimer(e.opts.ActTimeout)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-t.C():
			cancel(e.timeout)
		case <-ctx.Done():
		}
	}()
	b.stopTimer = func() { t.Stop() }
	b.exited = exited
	return ctx, b
}

// actBound is the timeout of one Actuator call: a timer of the Engine's pool on a clock
// with AfterFunc, a timer and a goroutine on another clock, nothing for a negative
// Options.ActTimeout. It is a value with a method, not a closure, so that a call costs no
// allocation of its own beyond its context.
type actBound struct {
	ctx       context.Context
	cancel    context.CancelCauseFunc
	timers    *timeoutTimers
	timer     *timeoutTimer
	stopTimer func()
	exited    chan struct{}
}

// stop stops the timer, cancels the context, waits for the goroutine, if any, and reports
// whether the timeout fired.
func (b actBound) stop() (fired bool) {
	if b.timer != nil {
		b.timers.disarm(b.timer)
	}
	if b.stopTimer != nil {
		b.stopTimer()
	}
	fired = errors.Is(context.Cause(b.ctx), ErrActTimeout)
	b.cancel(nil)
	if b.exited != nil {
		<-b.exited
	}
	return fired
}

// timeoutTimers keeps the stopped timers of finished Actuator calls for the next calls: a
// timer per call costs several allocations, and a zone outage makes tens of thousands of
// calls in a few seconds. It is safe for concurrent use; set cause before the first arm.
type timeoutTimers struct {
	pool  sync.Pool
	cause error // what a timer cancels its call's context with
}

// timeoutTimer is an AfterFunc timer that cancels the context of the call it bounds now.
type timeoutTimer struct {
	t clock.Timer
	// cancel is set before the timer is armed and read when it fires; the clock orders the
	// two (Reset and the timer's run synchronise, as time.Timer's do).
	cancel context.CancelCauseFunc
	cause  error
}

func (t *timeoutTimer) fire() { t.cancel(t.cause) }

// arm returns a timer that calls cancel(p.cause) after d: a kept one, reset, or a new one.
func (p *timeoutTimers) arm(c clock.WithDelayedExecution, d time.Duration, cancel context.CancelCauseFunc) *timeoutTimer {
	if t, ok := p.pool.Get().(*timeoutTimer); ok {
		t.cancel = cancel
		t.t.Reset(d)
		return t
	}
	t := &timeoutTimer{cancel: cancel, cause: p.cause}
	t.t = c.AfterFunc(d, t.fire)
	return t
}

// disarm stops t and keeps it, unless it has fired or is firing: its function may then
// still read cancel, and t is left alone.
func (p *timeoutTimers) disarm(t *timeoutTimer) {
	if t.t.Stop() {
		t.cancel = nil
		p.pool.Put(t)
	}
}
