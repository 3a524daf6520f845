package eviction

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// errDeleteTimeout is the cause of a Deleter context cancelled by Options.DeleteTimeout.
var errDeleteTimeout = errors.New("eviction: Deleter call timed out")

// PanicError is the error a failed attempt reports (to [Observer.Failed]) when the
// [Deleter] panicked. The Manager recovers the panic, so that one bad Deleter cannot take
// the process down, and retries the eviction like any other failure.
type PanicError struct {
	// Value is what the Deleter passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

// Error returns "eviction: Deleter panicked: VALUE".
func (e *PanicError) Error() string { return fmt.Sprintf("eviction: Deleter panicked: %v", e.Value) }

// callDeleter calls the Deleter with a context bounded by Options.DeleteTimeout and reports
// whether that timeout fired. A panic of the Deleter is returned as a *PanicError, so that
// it is reported and retried like any other failure, and the timeout is released either
// way.
func (m *Manager) callDeleter(ctx context.Context, ref PodRef) (timedOut bool, err error) {
	dctx, bound := m.withDeleteTimeout(ctx)
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
		timedOut = bound.stop()
	}()
	return false, m.deleter.Delete(dctx, ref)
}

// withDeleteTimeout returns a context for one Deleter call, cancelled after
// Options.DeleteTimeout on the Manager's clock, and the bound to stop once the call has
// returned. No goroutine of it outlives stop.
func (m *Manager) withDeleteTimeout(ctx context.Context) (context.Context, deleteBound) {
	ctx, cancel := context.WithCancelCause(ctx)
	b := deleteBound{ctx: ctx, cancel: cancel}
	if m.opts.DeleteTimeout < 0 {
		return ctx, b
	}
	if c, ok := m.clock.(clock.WithDelayedExecution); ok {
		b.timers = &m.deleteTimers
		b.timer = b.timers.arm(c, m.opts.DeleteTimeout, cancel)
		return ctx, b
	}
	t := m.clock.NewTimer(m.opts.DeleteTimeout)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-t.C():
			cancel(errDeleteTimeout)
		case <-ctx.Done():
		}
	}()
	b.stopTimer = func() { t.Stop() }
	b.exited = exited
	return ctx, b
}

// deleteBound is the timeout of one Deleter call: a timer of the Manager's pool on a clock
// with AfterFunc, a timer and a goroutine on another clock, nothing for a negative
// Options.DeleteTimeout. It is a value with a method, not a closure, so that a call costs no
// allocation of its own beyond its context.
type deleteBound struct {
	ctx       context.Context
	cancel    context.CancelCauseFunc
	timers    *timeoutTimers
	timer     *timeoutTimer
	stopTimer func()
	exited    chan struct{}
}

// stop stops the timer, cancels the context, waits for the goroutine, if any, and reports
// whether the timeout fired.
func (b deleteBound) stop() (fired bool) {
	if b.timer != nil {
		b.timers.disarm(b.timer)
	}
	if b.stopTimer != nil {
		b.stopTimer()
	}
	fired = errors.Is(context.Cause(b.ctx), errDeleteTimeout)
	b.cancel(nil)
	if b.exited != nil {
		<-b.exited
	}
	return fired
}

// timeoutTimers keeps the stopped timers of finished Deleter calls for the next calls: a
// timer per call costs several allocations, and a zone outage makes tens of thousands of
// calls in a few seconds. The zero value is empty and ready; it is safe for concurrent use.
type timeoutTimers struct{ pool sync.Pool }

// timeoutTimer is an AfterFunc timer that cancels the context of the call it bounds now.
type timeoutTimer struct {
	t clock.Timer
	// cancel is set before the timer is armed and read when it fires; the clock orders the
	// two (Reset and the timer's run synchronise, as time.Timer's do).
	cancel context.CancelCauseFunc
}

func (t *timeoutTimer) fire() { t.cancel(errDeleteTimeout) }

// arm returns a timer that calls cancel(errDeleteTimeout) after d: a kept one, reset, or a
// new one.
func (p *timeoutTimers) arm(c clock.WithDelayedExecution, d time.Duration, cancel context.CancelCauseFunc) *timeoutTimer {
	if t, ok := p.pool.Get().(*timeoutTimer); ok {
		t.cancel = cancel
		t.t.Reset(d)
		return t
	}
	t := &timeoutTimer{cancel: cancel}
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
