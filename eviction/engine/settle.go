package engine

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/tolerations"
)

// handleTarget decides about the target key from its state in the Source now, under its
// stripe lock. known is the holder whose update is being processed, if any.
func (e *Engine[T]) handleTarget(key types.NamespacedName, ev targetEvent[T], now time.Time, known knownHolder) {
	k := e.lock(key)
	defer k.unlock()
	if e.see(k, ev, now, known) {
		e.settle(k, k.current(), now)
	}
}

// see fills k's stripe with the state of k's target in the Source now, and its holders'
// taints, for settle. When the Source fails, it takes the object the update carried (ev)
// instead, and has the target decided again from the Source after a delay; it returns
// false when ev carries no object (a retry only), and there is nothing to decide from.
func (e *Engine[T]) see(k locked, ev targetEvent[T], now time.Time, known knownHolder) bool {
	obj, found, err := e.src.Target(k.key)
	if err != nil && apierrors.IsNotFound(err) {
		found, err = false, nil
	}
	if err == nil {
		e.retries.succeeded(func() string { return targetRetryKey(k.key) })
	} else {
		holder := ev.holder
		if !ev.retryOnly {
			_, holder = e.src.Locate(ev.obj)
		}
		e.retries.failed(targetRetryKey(k.key), now, func() { e.shardFor(holder).putTarget(k.key, ev) })
		if ev.retryOnly {
			return false
		}
		obj, found = ev.obj, !ev.deleted
	}
	s := &k.stripe.seen
	if known.gone {
		s.gone = known.name
	}
	if found {
		e.describe(s, obj)
		for _, b := range s.t.Bindings {
			taints := known.taints
			if known.name == "" || b.Holder != known.name {
				taints = e.taints.get(b.Holder)
			}
			s.taints = append(s.taints, taints)
		}
	}
	return true
}

// describe fills s with what the Source says of obj.
func (e *Engine[T]) describe(s *seen, obj T) {
	e.src.Describe(obj, &s.t)
	s.exists = true
}

// settle brings the eviction of k's target, r (the zero entry when it has none), in line
// with the target as k's stripe has seen it: it opens, moves, keeps or closes the eviction,
// and reports what it did. It is the one place that decides: an update and the recheck
// right before acting both come here, so the same state gets the same decision and the same
// report, whichever path sees it first.
func (e *Engine[T]) settle(k locked, r entry, now time.Time) {
	s := &k.stripe.seen
	if r.record == nil && k.recs.settleDone(k.key, s.exists, s.t.UID, s.t.Bindings) {
		return // acted on already; the Source has not caught up with the action
	}
	switch {
	case r.record == nil:
	case !s.exists:
		e.closeRecord(k, r, closeCancelled, ReasonTargetDeleted)
		return
	case r.uid != s.t.UID:
		wasRunning := r.is(running)
		e.closeRecord(k, r, closeCancelled, ReasonReplaced)
		if wasRunning {
			return // the new target is decided when that attempt has ended
		}
		r = entry{}
	}
	if !s.exists {
		return
	}
	var reason Reason
	switch {
	case s.t.Leaving != "":
		if r.record != nil && e.isOpen(k, r) {
			e.closeRecord(k, r, closeSkipped, s.t.Leaving)
		}
		return
	case len(s.t.Bindings) == 0:
		reason = ReasonUnbound
	}
	since := now
	if r.record != nil {
		since = r.countdownStart(now)
	}
	var v verdict
	if reason == "" {
		v = e.rules.judge(s.t.Bindings, s.taints, since, now)
		switch {
		case v.e.Verdict != tolerations.Stay:
		case v.tainted:
			reason = ReasonTolerated
		case r.record != nil && s.gone != "" && r.holder == s.gone:
			reason = ReasonHolderDeleted
		default:
			reason = ReasonNotTainted
		}
	}
	if reason != "" {
		if r.record != nil {
			e.closeRecord(k, r, closeCancelled, reason)
		}
		return
	}
	next := record{uid: s.t.UID, holder: v.holder}
	if e.opts.DeadlineSource == FromObservation {
		next.since = since.UnixNano()
	}
	if r.record != nil && e.keepsPlace(k, r, next, v.e, now) {
		return
	}
	e.schedule(k, r, next, v.e.At)
}

// boundTo reports whether bindings include one to holder.
func boundTo(bindings []Binding, holder string) bool {
	for i := range bindings {
		if bindings[i].Holder == holder {
			return true
		}
	}
	return false
}

// isOpen reports whether the record r of k's target is open: not closed while its attempt
// runs, with its closing report still owed.
func (e *Engine[T]) isOpen(k locked, r entry) bool {
	x := k.extra(r, false)
	return x == nil || x.closing == 0
}

// keepsPlace reports whether the open eviction r, which is to be next and due as ev says,
// must keep the place it has: it is scheduled for the same target, holder and time, or it
// is due and already waits for a worker, a retry, a token or the brake, or runs. Scheduling
// it anew would report a move that did not happen, would reset the backoff of a failing
// eviction, and would give up the token a waiting one holds.
func (e *Engine[T]) keepsPlace(k locked, r entry, next record, ev tolerations.Eviction, now time.Time) bool {
	if r.uid != next.uid || r.holder != next.holder || r.since != next.since || !e.isOpen(k, r) {
		return false
	}
	due := ev.Verdict == tolerations.EvictNow
	switch {
	case r.is(running):
		return due && r.due <= now.UnixNano() // the running attempt acts as a new one would
	case r.phase == scheduled:
		return r.due == dueNanos(ev.At) || due && r.due <= now.UnixNano()
	}
	return due // held or retrying
}

// schedule opens the eviction next of k's target for at, or moves the open one, r (the zero
// entry when there is none), there; and reports it. Every scheduling goes through here, and reports
// first, so that an eviction due at once is reported Scheduled before an act worker reports
// it Started. An attempt that runs goes on; when it fails, the eviction stays where this
// puts it. A closing report owed is no longer owed: the eviction stays open.
func (e *Engine[T]) schedule(k locked, r entry, next record, at time.Time) {
	next.phase, next.due = scheduled, dueNanos(at)
	if r.record == nil {
		r = k.open(next)
	} else {
		e.releaseHold(k, r)
		k.dropExtra(r)
		if r.uid == next.uid {
			next.attempts, next.flags = r.attempts, r.flags&(running|admitted)
		}
		*r.record = next
	}
	e.obs.Scheduled(r.ref(k.key), at)
	e.queue.Schedule(k.key, r.id, at)
}

// closeRecord closes the eviction r of k's target with the report kind and reason: at
// once, or, while an attempt runs, when that attempt ends (it reports Succeeded instead if
// it succeeds). A record closed already is left as it is.
func (e *Engine[T]) closeRecord(k locked, r entry, kind closeKind, reason Reason) {
	if !e.isOpen(k, r) {
		return
	}
	e.releaseHold(k, r)
	if r.is(running) {
		// Its attempt's end closes it. Until then it waits at the end of time, so that the
		// schedule still holds it and keeps its retries from running.
		x := k.extra(r, true)
		x.hold, x.closing, x.reason = nil, kind, reason
		e.queue.Schedule(k.key, r.id, never)
		return
	}
	e.queue.Cancel(k.key)
	ref := r.ref(k.key)
	k.close(r)
	e.report(kind, ref, reason)
}

// report makes a closing report of kind.
func (e *Engine[T]) report(kind closeKind, ref Ref, reason Reason) {
	if kind == closeSkipped {
		e.obs.Skipped(ref, reason)
	} else {
		e.obs.Cancelled(ref, reason)
	}
}

// releaseHold gives back what r holds at the gate, if anything.
func (e *Engine[T]) releaseHold(k locked, r entry) {
	if x := k.extra(r, false); x != nil && x.hold != nil {
		e.gate.release(k.key, x.hold, e.clock.Now().UnixNano())
		x.hold = nil
	}
}

// countdownStart returns where FromObservation's countdown of r started: when it was first
// scheduled, or now for a record that has no start (FromTimeAdded keeps none).
func (r *record) countdownStart(now time.Time) time.Time {
	if r.since == 0 {
		return now
	}
	return time.Unix(0, r.since)
}

// ref returns the Ref of the eviction r of key.
func (r *record) ref(key types.NamespacedName) Ref {
	return Ref{Namespace: key.Namespace, Name: key.Name, UID: r.uid, Holder: r.holder}
}
