package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/eviction/engine/internal/budget"
	"github.com/taintevict/taintevict/eviction/engine/internal/concurrency"
)

type call struct {
	ref     Ref
	a       Attempt
	returns uint64 // RetryUnreachable's count when it started
}

// work is the schedule's work for ev, whose time has come: it retries a failed lookup,
// rechecks, passes the budgets and calls the Actuator; each step may find nothing to do.
func (e *Engine[T]) work(ctx context.Context, ev *eviction, _ struct{}) {
	defer e.recoverWorker()
	cl, ok := e.beforeCall(ctx, ev)
	if !ok {
		return
	}
	call := e.conc.Begin(e.clock.Now())
	err := e.callActuator(ctx, cl.ref)
	e.conc.End(call, e.clock.Now(), callOutcome(err))
	e.afterCall(ctx, ev, cl, err)
}

// lockEviction locks ev's stripe and returns a cursor on ev; on none if ev was dropped
// since the schedule gave it.
func (e *Engine[T]) lockEviction(ev *eviction) cursor[T] {
	st := e.store.lock(ev.key)
	c := cursor[T]{e: e, st: st, key: ev.key, ev: ev}
	if st.evictions[ev.key] != ev {
		c.ev = nil
	}
	return c
}

// callOutcome is how a call that returned err ended, for the act workers' limit.
func callOutcome(err error) concurrency.Outcome {
	switch {
	case err == nil:
		return concurrency.Done
	case IsOverload(err):
		return concurrency.Overloaded
	}
	return concurrency.Failed // a refusal, a conflict, the target gone: answered, not acted
}

// beforeCall does, under ev's lock, what comes before a call, and returns the call to make.
func (e *Engine[T]) beforeCall(ctx context.Context, ev *eviction) (call, bool) {
	c := e.lockEviction(ev)
	defer c.st.unlock()
	if c.ev == nil {
		return call{}, false
	}
	defer c.arm()
	now := e.clock.Now()
	if c.lookupDue(now.UnixNano()) {
		e.relookup(ctx, &c, now)
	}
	if c.goneByDue(now.UnixNano()) || !c.wantsWorker(now.UnixNano()) {
		return call{}, false
	}
	v := &c.st.scratch.view
	if err := e.recheck(&c, v, now); err != nil {
		c.failRecheck(err, now)
		return call{}, false
	}
	c.settle(v, now)
	if !c.wantsWorker(now.UnixNano()) || c.ev.state == running {
		return call{}, false // the recheck closed it, moved it, or found it running
	}
	if e.gate != nil && e.waits(&c, v, now) {
		return call{}, false
	}
	if e.opts.DryRun {
		c.dryRun()
		return call{}, false
	}
	if x := c.ev.x; x != nil && x.retryAt > now.UnixNano() {
		c.forward() // sent back (RetryUnreachable, a budget's release) before its backoff is over
	}
	returns := e.unreach.returns.Load()
	a := c.start()
	return call{ref: c.ev.ref(), a: a, returns: returns}, true
}

// recheck reads c's target and its holders from the Source into v, right before acting.
func (e *Engine[T]) recheck(c *cursor[T], v *view, now time.Time) error {
	obj, found, err := orNotFound(e.src.Target(c.key))
	if err != nil {
		err = fmt.Errorf("engine: recheck target %s: %w", c.ev.ref(), err)
	} else {
		err = e.newView(v, obj, found, e.currentHolder, now)
	}
	if err != nil {
		e.stats.sourceErrors.Add(1)
	}
	return err
}

// waits passes c's due eviction through the budgets (a retry of one admitted, through those
// that hold while a condition lasts), and reports whether they hold it.
func (e *Engine[T]) waits(c *cursor[T], v *view, now time.Time) bool {
	s := &c.st.scratch
	since, h := now, (*budget.Hold)(nil)
	if x := c.ev.x; x != nil {
		h = x.hold
		if x.since != 0 {
			since = time.Unix(0, x.since)
		}
	}
	s.causes = e.rules.causes(s.causes[:0], v, since, now)
	s.req = budget.Request{Key: c.key, UID: c.ev.uid, Holder: c.ev.holder, Causes: s.causes,
		Owner: budget.Owner(v.target.Owner), Now: now.UnixNano()}
	if !v.target.Created.IsZero() {
		s.req.Created = v.target.Created.UnixNano()
	}
	retry := c.ev.flags&admitted != 0
	h, d := e.gate.Admit(c.ev, &s.req, h, retry)
	e.wake(d.Woken)
	if !d.Wait {
		c.admit()
		return false
	}
	if retry {
		c.leaveFlight()
	}
	c.hold(h, d.Until, Reason(d.Reason))
	return true
}

// callActuator calls the Actuator, bounded by Options.ActTimeout, and returns its error:
// wrapped with the timeout when that fired, a *PanicError when it panicked.
func (e *Engine[T]) callActuator(ctx context.Context, ref Ref) (err error) {
	b := e.bound(ctx)
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
		if e.unbound(b) && err != nil && !errors.Is(err, ErrActTimeout) {
			err = fmt.Errorf("%w: %w", e.timeout, err)
		}
	}()
	return e.act.Act(b.ctx, ref)
}

func (e *Engine[T]) afterCall(ctx context.Context, ev *eviction, cl call, err error) {
	c := e.lockEviction(ev)
	defer c.st.unlock()
	if c.ev == nil {
		return // cannot be: a running eviction is never dropped
	}
	defer c.arm()
	now := e.clock.Now()
	switch {
	case err == nil || IsGone(err):
		if c.succeed(cl) {
			e.relookup(ctx, &c, now) // a target that replaced this one, or its removal, is due
		}
	case c.ev.state == closing:
		c.finish()
		e.relookup(ctx, &c, now) // a target that replaced this one may be due
	default:
		unreach := e.opts.Unreachable != nil && e.opts.Unreachable(err)
		returned := e.unreach.returns.Load() != cl.returns
		c.fail(cl, err, now, unreach, returned)
	}
}

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
