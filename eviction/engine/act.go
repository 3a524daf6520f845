package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/taintevict/taintevict/eviction/engine/internal/budget"
	"github.com/taintevict/taintevict/eviction/engine/internal/concurrency"
	"github.com/taintevict/taintevict/eviction/engine/internal/store"
)

// call is one Actuator call, as an act worker carries it from before the call to after:
// what it acts on, its Attempt, and the count of RetryUnreachable calls when it started.
type call struct {
	ref     Ref
	a       Attempt
	returns uint64
}

// work is the schedule's work for the entry id: the time it asked for has come (or, for a
// stripe's ID, the time to compact it). It retries
// a failed lookup of the target, decides again from the Source's current state (the
// recheck), passes the budgets and calls the Actuator; each step may find nothing to do.
// The eviction, not the schedule, keeps its retries.
func (e *Engine[T]) work(ctx context.Context, id store.ID, _ struct{}) {
	defer e.recoverWorker()
	if stripe, ok := id.Stripe(); ok {
		e.compact(stripe) // see storeMover
		return
	}
	cl, ok := e.beforeCall(id)
	if !ok {
		return
	}
	call := e.conc.Begin(e.clock.Now())
	err := e.callActuator(ctx, cl.ref)
	e.conc.End(call, e.clock.Now(), callOutcome(err))
	e.afterCall(id, cl, err)
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

// beforeCall does what comes before a call to the eviction id, under its lock, and returns
// the call to make, if any.
func (e *Engine[T]) beforeCall(id store.ID) (call, bool) {
	k, ev := e.store.LockID(id)
	defer k.Unlock()
	c := &cursor[T]{e: e, k: k, ev: ev, id: id}
	if ev == nil {
		return call{}, false // dropped since this run was taken
	}
	defer c.arm()
	now := e.clock.Now()
	if c.lookupDue(now.UnixNano()) {
		e.relookup(c, now)
	}
	if !c.wantsWorker(now.UnixNano()) {
		return call{}, false
	}
	v := &k.Scratch().view
	if err := e.recheck(c, v, now); err != nil {
		c.failRecheck(err, now)
		return call{}, false
	}
	c.settle(v, now)
	if !c.wantsWorker(now.UnixNano()) || c.ev.state == running {
		return call{}, false // the recheck closed it, moved it, or found it running
	}
	if e.gate != nil && c.ev.flags&admitted == 0 && e.waits(c, v, now) {
		return call{}, false
	}
	if e.opts.DryRun {
		c.dryRun()
		return call{}, false
	}
	if c.ev.state == retrying && c.ev.x.retryAt > now.UnixNano() {
		c.forward() // RetryUnreachable sends it back before its backoff is over
	}
	returns := e.unreach.returns.Load()
	a := c.start(now)
	return call{ref: c.ref(), a: a, returns: returns}, true
}

// recheck reads the target of c's eviction, and its holders, from the Source into v: the
// state right before acting. It returns the error of a lookup that failed.
func (e *Engine[T]) recheck(c *cursor[T], v *view, now time.Time) error {
	obj, found, err := e.src.Target(c.k.Key())
	if err != nil && !apierrors.IsNotFound(err) {
		e.stats.sourceErrors.Add(1)
		return fmt.Errorf("engine: recheck target %s: %w", c.ref(), err)
	}
	if err := e.newView(v, obj, found && err == nil, e.currentHolder, now); err != nil {
		e.stats.sourceErrors.Add(1)
		return err
	}
	return nil
}

// waits passes c's due eviction through the budgets: it holds it when they say wait, and
// returns true; it marks it admitted when they let it go, and returns false.
func (e *Engine[T]) waits(c *cursor[T], v *view, now time.Time) bool {
	s := c.k.Scratch()
	r := &s.req
	*r = budget.Request{ID: uint64(c.id), Key: c.k.Key(), UID: c.ev.uid, Holder: c.ev.holder, Owner: budget.Owner(v.target.Owner), Now: now.UnixNano()}
	if !v.target.Created.IsZero() {
		r.Created = v.target.Created.UnixNano()
	}
	if e.gate.NeedsCauses() {
		since := now
		if x := c.ev.x; x != nil && x.since != 0 {
			since = time.Unix(0, x.since)
		}
		s.causes = e.rules.causes(s.causes[:0], v, since, now)
		r.Causes = s.causes
	}
	var h *budget.Hold
	if x := c.ev.x; x != nil {
		h = x.hold
	}
	h, d := e.gate.Admit(r, h)
	e.wake(d.Woken)
	if !d.Wait {
		c.admit()
		return false
	}
	c.hold(h, d.Until, d.Report)
	return true
}

// callActuator calls the Actuator with a context bounded by Options.ActTimeout and returns
// its error: wrapped with the timeout when that fired, and as a *PanicError when the
// Actuator panicked, so that it is reported and retried like any other failure.
func (e *Engine[T]) callActuator(ctx context.Context, ref Ref) (err error) {
	actx, bound := e.timeouts.Start(ctx)
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
		if bound.Stop() && err != nil && !errors.Is(err, ErrActTimeout) {
			err = fmt.Errorf("%w: %w", e.timeout, err)
		}
	}()
	return e.act.Act(actx, ref)
}

// afterCall ends the call cl to the eviction id, which returned err: Succeeded; the report
// owed by an eviction closed while the call ran; or Failed, and a retry.
func (e *Engine[T]) afterCall(id store.ID, cl call, err error) {
	k, ev := e.store.LockID(id)
	defer k.Unlock()
	if ev == nil {
		return // cannot be: a running eviction is never dropped
	}
	c := &cursor[T]{e: e, k: k, ev: ev, id: id}
	defer c.arm()
	now := e.clock.Now()
	switch {
	case err == nil || IsGone(err):
		if c.succeed(cl) {
			e.relookup(c, now) // a target that replaced this one, or its removal, is due
		}
	case c.ev.state == closing:
		c.finish()
		e.relookup(c, now) // a target that replaced this one may be due
	default:
		unreach := e.opts.Unreachable != nil && e.opts.Unreachable(err)
		returned := e.unreach.returns.Load() != cl.returns
		c.fail(cl, err, now, unreach, returned)
	}
}
