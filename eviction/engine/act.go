package engine

import (
	"context"
	"fmt"
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// work is the schedule's work for key: its record wants a worker. It decides again from the
// Source's current state (the recheck), passes the gate, and calls the Actuator. It always
// returns nil: the record, not the schedule, keeps an eviction's attempts and retries.
func (e *Engine[T]) work(ctx context.Context, key types.NamespacedName, id recordID) error {
	defer e.recoverWorker()
	ref, due, call := e.beforeAct(key, id)
	if !call {
		return nil
	}
	saturated := e.conc.begin()
	start := e.clock.Now()
	returns := e.unreach.returns.Load()
	err := e.callActuator(ctx, ref)
	e.conc.end(e.clock.Since(start), saturated, err == nil)
	e.afterAct(key, id, ref, due, err, returns)
	return nil
}

// beforeAct rechecks the eviction of key and, for a first attempt, passes it through the
// gate. It reports Started and returns true when the Actuator is to be called; otherwise
// the record says why not, and what was reported about it.
func (e *Engine[T]) beforeAct(key types.NamespacedName, id recordID) (ref Ref, due time.Time, call bool) {
	k := e.lock(key)
	defer k.unlock()
	now := e.clock.Now()
	r := k.byID(id)
	if r.record == nil || !e.wantsWorker(k, r, now) {
		return Ref{}, time.Time{}, false // closed, or moved later since this run was taken
	}
	if err := e.recheck(k, r, now); err != nil {
		// A hold at the gate stays: the retry goes when its slot has come, with no second
		// Delayed, and the token it waited for is not given up.
		e.obs.Failed(r.ref(key), Attempt{Due: nanosTime(r.due, e.loc)}, err)
		e.retry(k, r, e.retryAt(r, now))
		return Ref{}, time.Time{}, false
	}
	e.settle(k, r, now)
	if r = k.byID(id); r.record == nil || !e.wantsWorker(k, r, now) {
		return Ref{}, time.Time{}, false // the recheck closed or moved it
	}
	if e.gate != nil && !r.is(admitted) && e.waits(k, r, now) {
		return Ref{}, time.Time{}, false
	}
	ref, due = r.ref(key), nanosTime(r.due, e.loc)
	if e.opts.DryRun {
		e.queue.Cancel(key) // a run's own key: only its retries, which there are none of
		k.close(r)
		e.obs.Succeeded(ref, Attempt{Due: due}, true)
		return Ref{}, time.Time{}, false
	}
	r.attempts++
	r.set(running, true)
	e.obs.Started(ref, Attempt{Call: int(r.attempts), Due: due})
	return ref, due, true
}

// wantsWorker reports whether the record r is an open eviction that a worker is to take
// now: due, or waiting to retry, or waiting at the gate (which decides again), and not
// running already.
func (e *Engine[T]) wantsWorker(k locked, r entry, now time.Time) bool {
	return !r.is(running) && (r.phase != scheduled || r.due <= now.UnixNano()) && e.isOpen(k, r)
}

// recheck reads the target of the eviction r, and its holders, from the Source into k's
// stripe, for settle: the state right before acting. It returns the error of a lookup that
// failed.
func (e *Engine[T]) recheck(k locked, r entry, now time.Time) error {
	obj, found, err := e.src.Target(k.key)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("engine: recheck target %s: %w", r.ref(k.key), err)
	}
	if !found {
		return nil
	}
	s := &k.stripe.seen
	e.describe(s, obj)
	if s.t.Leaving != "" {
		return nil // settle closes it; its holders do not matter
	}
	// A target that replaced r's (another UID) is decided here as its update will decide
	// it, from its own bindings.
	for _, b := range s.t.Bindings {
		h, found, err := e.src.Holder(b.Holder)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("engine: recheck holder %s: %w", b.Holder, err)
		}
		var taints []v1.Taint
		switch {
		case found:
			taints = e.taints.start(b.Holder, h.Taints, now)
		case b.Holder == r.holder:
			s.gone = b.Holder
		}
		s.taints = append(s.taints, taints)
		s.groups = append(s.groups, h.Group)
	}
	return nil
}

// waits passes the eviction r of k's target, which the recheck found due, through the gate:
// the brake, then the rate limits. When it must wait, waits holds it in its record and in
// the schedule, reports Delayed when the reason changed, and returns true; when it may go,
// it marks r admitted (its retries take no token) and returns false.
func (e *Engine[T]) waits(k locked, r entry, now time.Time) bool {
	var causes []cause
	if e.gate.needsCauses() {
		s := &k.stripe.seen
		causes = e.rules.causes(k.stripe.causes[:0], s.t.Bindings, s.taints, s.groups, r.countdownStart(now), now)
		k.stripe.causes = causes
	}
	var h *hold
	if x := k.extra(r, false); x != nil {
		h = x.hold
	}
	h, d := e.gate.admit(r.ref(k.key), h, causes, now.UnixNano())
	if !d.wait {
		r.set(admitted, true)
		k.dropExtra(r) // the gate has forgotten the hold; nothing else is kept while open
		return false
	}
	k.extra(r, true).hold = h
	r.phase = held
	// A paused eviction waits at the end of time, so that the schedule keeps its record,
	// until the brake releases it (see unpause).
	until := never
	if d.until != 0 {
		until = time.Unix(0, d.until)
	}
	e.queue.Schedule(k.key, r.id, until)
	if d.report != "" {
		e.obs.Delayed(r.ref(k.key), d.report)
	}
	return true
}

// retryAt returns when the eviction r, whose attempt failed at now, is to be retried: after
// the backoff of its consecutive failures, this one included.
func (e *Engine[T]) retryAt(r entry, now time.Time) time.Time {
	return now.Add(e.opts.Backoff.Delay(int(r.fails) + 1))
}

// retry schedules the retry of the eviction r of k's target, whose attempt failed, at at
// (see retryAt), and counts the failure.
func (e *Engine[T]) retry(k locked, r entry, at time.Time) {
	if r.fails < math.MaxInt16 { // the backoff is at its cap long before
		r.fails++
	}
	r.phase = retrying
	e.queue.Schedule(k.key, r.id, at)
}

// afterAct ends the attempt of the eviction ref, due at due, that the Actuator returned
// err for: Succeeded; the closing report owed for an eviction closed while it ran; or
// Failed, and a retry after the backoff unless the eviction was moved while it ran. returns
// is the count of RetryUnreachable calls when the attempt started: one made while it ran
// retries an unreachable failure at once, as it would have had the failure come first.
func (e *Engine[T]) afterAct(key types.NamespacedName, id recordID, ref Ref, due time.Time, err error, returns uint64) {
	k := e.lock(key)
	defer k.unlock()
	now := e.clock.Now()
	r := k.byID(id) // a running record is never closed: its closing waits for this
	r.set(running, false)
	x := k.extra(r, false)
	switch {
	case err == nil || IsGone(err):
		e.noteUnreachable(key, id, nil, 0)
		e.queue.Cancel(key) // a scheduling made while it ran is moot: the target is gone
		attempt := Attempt{Call: int(r.attempts), Due: due}
		done := doneRecord{uid: r.uid, holder: ref.Holder}
		k.close(r)
		k.setDone(done)
		e.obs.Succeeded(ref, attempt, false)
		e.resettle(k, ref.Holder, now) // forgets the target if the Source shows the action's effect
	case x != nil && x.closing != 0:
		e.noteUnreachable(key, id, nil, 0)
		e.queue.Cancel(key)
		k.close(r)
		e.report(x.closing, ref, x.reason)
		e.resettle(k, ref.Holder, now) // a target that replaced this one may be due
	default:
		// Noted before it is reported, so that a RetryUnreachable that follows the report
		// finds it.
		back := e.noteUnreachable(key, id, err, returns)
		e.obs.Failed(ref, Attempt{Call: int(r.attempts), Due: due}, err)
		// A move while it ran stands when it is later than the retry; the schedule holds
		// it then (a time other than the one the attempt ran for). Otherwise the retry
		// waits its backoff, wherever the eviction was moved.
		retryAt := e.retryAt(r, now) // once: with jitter, a second draw would differ
		if back {
			retryAt = now // its backoff kept: the next failure waits the longer one
		}
		moved := r.due != dueNanos(due) || r.holder != ref.Holder
		if moved && r.phase == scheduled && r.due > retryAt.UnixNano() {
			return
		}
		e.retry(k, r, retryAt)
	}
}

// resettle decides again about k's target, whose record was just closed, from the Source,
// as an update would. When the lookup fails, the target is decided again after a delay, on
// the shard of holder, where the closed record was: nothing else might (the replacement of
// a target is decided when the attempt on the old one has ended, here).
func (e *Engine[T]) resettle(k locked, holder string, now time.Time) {
	if e.see(k, targetEvent[T]{retryOnly: true, holder: holder}, now, knownHolder{}) {
		e.settle(k, entry{}, now)
	}
}
