package timeout

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Timeouts bound calls: each call's context is cancelled, with a cause, once it has run
// for a duration on a clock. Make it with New; it is safe for concurrent use.
type Timeouts struct {
	clock  clock.Clock
	d      time.Duration // negative: no bound
	timers timeoutTimers
}

// New returns the bounds of d on clk, whose contexts are cancelled with cause; a negative d
// bounds nothing.
func New(clk clock.Clock, d time.Duration, cause error) *Timeouts {
	t := &Timeouts{clock: clk, d: d}
	t.timers.cause = cause
	return t
}

// Start returns a context for one call, cancelled after the duration on the clock, and the
// bound to stop once the call has returned. No goroutine of it outlives Stop.
func (t *Timeouts) Start(ctx context.Context) (context.Context, Bound) {
	ctx, cancel := context.WithCancelCause(ctx)
	b := Bound{ctx: ctx, cancel: cancel, cause: t.timers.cause}
	if t.d < 0 {
		return ctx, b
	}
	if c, ok := t.clock.(clock.WithDelayedExecution); ok {
		b.timers = &t.timers
		b.timer = b.timers.arm(c, t.d, cancel)
		return ctx, b
	}
	timer := t.clock.NewTimer(t.d)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-timer.C():
			cancel(t.timers.cause)
		case <-ctx.Done():
		}
	}()
	b.stopTimer = func() { timer.Stop() }
	b.exited = exited
	return ctx, b
}

// Bound is the timeout of one call: a timer of the pool on a clock with AfterFunc, a timer
// and a goroutine on another clock, nothing for a negative duration. It is a value with a
// method, not a closure, so that a call costs no allocation of its own beyond its context.
type Bound struct {
	ctx       context.Context
	cancel    context.CancelCauseFunc
	timers    *timeoutTimers
	timer     *timeoutTimer
	stopTimer func()
	exited    chan struct{}
	cause     error
}

// Stop stops the timer, cancels the context, waits for the goroutine, if any, and reports
// whether the timeout fired.
func (b Bound) Stop() (fired bool) {
	if b.timer != nil {
		b.timers.disarm(b.timer)
	}
	if b.stopTimer != nil {
		b.stopTimer()
	}
	fired = errors.Is(context.Cause(b.ctx), b.cause)
	b.cancel(nil)
	if b.exited != nil {
		<-b.exited
	}
	return fired
}

// timeoutTimers keeps the stopped timers of finished calls for the next calls: a timer per
// call costs several allocations, and a zone outage makes tens of thousands of calls in a
// few seconds. It is safe for concurrent use; set cause before the first arm.
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
