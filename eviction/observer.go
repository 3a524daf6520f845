package eviction

import (
	"time"

	"github.com/taintevict/taintevict/eviction/engine"
)

// Observer is told everything a [Manager] decides, so that the caller can turn it into
// Kubernetes Events, metrics and logs. Its methods are called synchronously from the
// Manager's goroutines, several at once (never two at once for the same pod), while the
// Manager holds the pod's lock: they must be safe for concurrent use, return quickly, and
// not call the Manager (Pending, WaitIdle or an update method would wait for a lock the
// call holds). A method that panics stops the Manager: [Manager.Run] returns the panic as a
// *[PanicError]. Embed [NopObserver] to implement only some of them.
//
// The reports follow the engine's contract ([engine.Observer]): an eviction is open from
// its first Scheduled until exactly one closing report, Succeeded, Cancelled or Skipped;
// Scheduled (a move), Delayed, Started and Failed come only while it is open, and every
// Started is followed by exactly one Succeeded, Failed, Cancelled or Skipped. So an observer
// that adds one on a pod's first Scheduled and subtracts one on its closing report agrees,
// whenever the Manager is idle, with [Manager.Pending] plus the Deleter calls running. A pod
// that is leaving (finished, or being deleted) and has no open eviction is not reported.
type Observer interface {
	// Scheduled: the pod will be evicted at the given time (now or before for an eviction
	// that is due at once). It opens the eviction, or moves an open one (the deadline moved,
	// or the recheck right before deleting found it due later); always before the eviction
	// can start.
	Scheduled(pod PodRef, at time.Time)
	// Cancelled: the eviction was removed: the pod was deleted or replaced, or it is not
	// due any more (its node was untainted or deleted, or it tolerates the taints now),
	// whether an update or the recheck right before deleting found it. When that happens
	// while an attempt runs, it is reported when the attempt ends, instead of Failed; an
	// attempt that deletes the pod reports Succeeded instead.
	Cancelled(pod PodRef, reason Reason)
	// Skipped closes an eviction whose pod turned out to be leaving on its own: it has
	// finished (ReasonPodFinished) or is being deleted (ReasonPodTerminating). When that is
	// found while an attempt runs, it is reported when the attempt ends, instead of Failed.
	Skipped(pod PodRef, reason Reason)
	// Started: the Deleter is about to be called (not in dry-run mode); attempt counts from 1.
	// due is the time the eviction was scheduled for, as Scheduled last reported it (a
	// wait for a rate limit or the brake does not move it), so that how late the eviction
	// runs is known without remembering each Scheduled.
	Started(pod PodRef, attempt int, due time.Time)
	// Succeeded: the pod was deleted, was already gone, or (dryRun) would have been deleted.
	// due is as for Started.
	Succeeded(pod PodRef, attempt int, due time.Time, dryRun bool)
	// Failed: the Deleter or a lookup of the recheck before it failed; the eviction stays
	// open and another attempt follows after the backoff, unless a closing report comes
	// first. A Failed is never the last word on an eviction while the Manager runs.
	Failed(pod PodRef, attempt int, err error)
	// Delayed: the eviction is due but waits, for a token of a rate limit
	// ([ReasonRateLimited]) or for the brake to release ([ReasonPaused]); it stays pending
	// (see [Manager.Pending]). Reported when the reason changes, not each time the Manager
	// looks again, and only before the first attempt. It neither opens nor closes an
	// eviction: Started, Cancelled or Skipped follows.
	Delayed(pod PodRef, reason Reason)
}

// NopObserver implements [Observer] with methods that do nothing. Its zero value is ready
// to use; embed it to implement only some methods.
type NopObserver struct{}

var _ Observer = NopObserver{}

// Scheduled does nothing.
func (NopObserver) Scheduled(PodRef, time.Time) {}

// Cancelled does nothing.
func (NopObserver) Cancelled(PodRef, Reason) {}

// Skipped does nothing.
func (NopObserver) Skipped(PodRef, Reason) {}

// Started does nothing.
func (NopObserver) Started(PodRef, int, time.Time) {}

// Succeeded does nothing.
func (NopObserver) Succeeded(PodRef, int, time.Time, bool) {}

// Failed does nothing.
func (NopObserver) Failed(PodRef, int, error) {}

// Delayed does nothing.
func (NopObserver) Delayed(PodRef, Reason) {}

// Observers is an [Observer] that tells each of its observers every decision, in order:
// the Manager takes one Observer, and a program may want several (one for Events and logs,
// one for metrics, a test's recorder). It is as safe for concurrent use as its observers
// are; a nil or empty Observers tells no one.
type Observers []Observer

var _ Observer = Observers(nil)

// Scheduled tells each observer.
func (obs Observers) Scheduled(pod PodRef, at time.Time) {
	for _, o := range obs {
		o.Scheduled(pod, at)
	}
}

// Cancelled tells each observer.
func (obs Observers) Cancelled(pod PodRef, reason Reason) {
	for _, o := range obs {
		o.Cancelled(pod, reason)
	}
}

// Skipped tells each observer.
func (obs Observers) Skipped(pod PodRef, reason Reason) {
	for _, o := range obs {
		o.Skipped(pod, reason)
	}
}

// Started tells each observer.
func (obs Observers) Started(pod PodRef, attempt int, due time.Time) {
	for _, o := range obs {
		o.Started(pod, attempt, due)
	}
}

// Succeeded tells each observer.
func (obs Observers) Succeeded(pod PodRef, attempt int, due time.Time, dryRun bool) {
	for _, o := range obs {
		o.Succeeded(pod, attempt, due, dryRun)
	}
}

// Failed tells each observer.
func (obs Observers) Failed(pod PodRef, attempt int, err error) {
	for _, o := range obs {
		o.Failed(pod, attempt, err)
	}
}

// Delayed tells each observer.
func (obs Observers) Delayed(pod PodRef, reason Reason) {
	for _, o := range obs {
		o.Delayed(pod, reason)
	}
}

// PodObserver returns o as the [engine.Observer] of an engine whose targets are pods: the
// Manager's own, and the one to give an engine of pods on other holders, such as devices,
// to reuse an Observer. It turns each [engine.Ref] into a [PodRef] whose Node is the
// holder, and the engine's reasons into the names above (engine.ReasonNotTainted is
// ReasonNotTainted, "NodeNotTainted"; engine.ReasonHolderDeleted is ReasonNodeDeleted, and
// so on).
func PodObserver(o Observer) engine.Observer { return podObserver{o} }

type podObserver struct{ o Observer }

func (p podObserver) Scheduled(t engine.Ref, at time.Time) { p.o.Scheduled(podRef(t), at) }
func (p podObserver) Cancelled(t engine.Ref, r engine.Reason) {
	p.o.Cancelled(podRef(t), podReason(r))
}
func (p podObserver) Skipped(t engine.Ref, r engine.Reason) { p.o.Skipped(podRef(t), podReason(r)) }
func (p podObserver) Started(t engine.Ref, attempt int, due time.Time) {
	p.o.Started(podRef(t), attempt, due)
}
func (p podObserver) Succeeded(t engine.Ref, attempt int, due time.Time, dryRun bool) {
	p.o.Succeeded(podRef(t), attempt, due, dryRun)
}
func (p podObserver) Failed(t engine.Ref, attempt int, err error) {
	p.o.Failed(podRef(t), attempt, err)
}
func (p podObserver) Delayed(t engine.Ref, r engine.Reason) { p.o.Delayed(podRef(t), podReason(r)) }
