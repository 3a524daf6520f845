package engine

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// work is the schedule's work for key: its record wants a worker. It decides again from the
// Source's current state (the recheck), passes the gate, and calls the Actuator. It always
// returns nil: the record, not the schedule, keeps an eviction's attempts and retries.
func (e *Engine[T]) work(ctx context.Context, key types.NamespacedName, id recordID) error {
	ref, due, call := e.beforeAct(key, id)
	if call {
		e.afterAct(key, id, ref, due, e.callActuator(ctx, ref))
	}
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
		e.releaseHold(k, r) // the retry passes the gate anew
		k.dropExtra(r)
		r.attempts++
		e.obs.Failed(r.ref(key), int(r.attempts), err)
		e.retry(k, r, now)
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
		attempt := int(r.attempts) + 1
		e.queue.Cancel(key) // a run's own key: only its retries, which there are none of
		k.close(r)
		e.obs.Succeeded(ref, attempt, due, true)
		return Ref{}, time.Time{}, false
	}
	r.attempts++
	r.set(running, true)
	e.obs.Started(ref, int(r.attempts), due)
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
	if s.t.UID != r.uid || s.t.Leaving != "" {
		return nil // settle closes it; its holders do not matter
	}
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

// retry schedules the retry of the eviction r of k's target, whose attempt failed, after
// the backoff of its consecutive failures.
func (e *Engine[T]) retry(k locked, r entry, now time.Time) {
	r.fails++
	r.phase = retrying
	e.queue.Schedule(k.key, r.id, now.Add(e.opts.Backoff.Delay(int(r.fails))))
}

// afterAct ends the attempt of the eviction ref, due at due, that the Actuator returned
// err for: Succeeded; the closing report owed for an eviction closed while it ran; or
// Failed, and a retry after the backoff unless the eviction was moved while it ran.
func (e *Engine[T]) afterAct(key types.NamespacedName, id recordID, ref Ref, due time.Time, err error) {
	k := e.lock(key)
	defer k.unlock()
	now := e.clock.Now()
	r := k.byID(id) // a running record is never closed: its closing waits for this
	r.set(running, false)
	x := k.extra(r, false)
	switch {
	case err == nil || IsGone(err):
		e.queue.Cancel(key) // a scheduling made while it ran is moot: the target is gone
		attempt := int(r.attempts)
		done := doneRecord{uid: r.uid, holder: ref.Holder}
		k.close(r)
		k.setDone(done)
		e.obs.Succeeded(ref, attempt, due, false)
		e.resettle(k, now) // forgets the target if the Source shows the action's effect
	case x != nil && x.closing != 0:
		e.queue.Cancel(key)
		k.close(r)
		e.report(x.closing, ref, x.reason)
		e.resettle(k, now) // a target that replaced this one may be due
	default:
		e.obs.Failed(ref, int(r.attempts), err)
		// A move while it ran stands when it is later than the retry; the schedule holds
		// it then (a time other than the one the attempt ran for). Otherwise the retry
		// waits its backoff, wherever the eviction was moved.
		retryAt := now.Add(e.opts.Backoff.Delay(int(r.fails) + 1))
		moved := r.due != dueNanos(due) || r.holder != ref.Holder
		if moved && r.phase == scheduled && r.due > retryAt.UnixNano() {
			return
		}
		e.retry(k, r, now)
	}
}

// resettle decides again about k's target, whose record was just closed, from the Source,
// as an update would.
func (e *Engine[T]) resettle(k locked, now time.Time) {
	s := &k.stripe.seen
	s.clear()
	obj, found, err := e.src.Target(k.key)
	if err != nil && !apierrors.IsNotFound(err) {
		// The decision waits for the next update or retry of the target; a done record
		// stays until then, which only keeps the Engine from acting on that UID again.
		return
	}
	if found {
		e.describe(s, obj)
		for _, b := range s.t.Bindings {
			s.taints = append(s.taints, e.taints.get(b.Holder))
		}
	}
	e.settle(k, entry{}, now)
}
