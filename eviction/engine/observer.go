package engine

import (
	"time"
)

// Observer is told everything an [Engine] decides, so that the caller can turn it into
// Kubernetes Events, metrics and logs. Its methods are called synchronously from the
// Engine's goroutines, several at once (never two at once for the same target), while the
// Engine holds the target's lock: they must be safe for concurrent use, return quickly, and
// not call the Engine (Pending, WaitIdle or an update method would wait for a lock that the
// call itself holds). A method that panics stops the Engine: [Engine.Run] returns the
// panic as a *[PanicError]. Embed [NopObserver] to implement only some of them.
//
// The reports about one target come in the order the decisions were made, and follow one
// contract. An eviction is open from its first Scheduled until exactly one closing report:
// Succeeded, Cancelled or Skipped. While it is open, Scheduled may come again (the deadline
// moved, or another holder now decides it), and Delayed, Started and Failed may come; none
// of these comes while no eviction of the target is open. Every Started is followed by
// exactly one Succeeded, Failed, Cancelled or Skipped. So an observer that adds one on the
// first Scheduled of a target and subtracts one on its closing report agrees, whenever the
// Engine is idle, with [Engine.Pending] plus the actuator calls running. A target that is
// leaving, or that the Engine has acted on already, and that has no open eviction, is not
// reported at all.
type Observer interface {
	// Scheduled: the target will be acted on at the given time (now or before for an
	// eviction that is due at once). It opens the eviction, or moves an open one.
	Scheduled(target Ref, at time.Time)
	// Cancelled closes an eviction that is no longer wanted: the target was deleted or
	// replaced, its holders were untainted or deleted, or it tolerates their taints now.
	// When that happens while an attempt runs, it is reported when the attempt ends,
	// instead of Failed; an attempt that succeeds reports Succeeded instead.
	Cancelled(target Ref, reason Reason)
	// Skipped closes an eviction whose target turned out to be leaving on its own: reason
	// is the [Target.Leaving] the Source gave. As for Cancelled, an attempt that runs
	// reports it when it ends.
	Skipped(target Ref, reason Reason)
	// Started: the actuator is about to be called (not in dry-run mode); attempt counts
	// from 1, and counts failed rechecks too (see Failed), so a first call may be attempt
	// 2. due is the time the eviction was scheduled for, as Scheduled last reported it
	// (a wait for a rate limit or the brake does not move it).
	Started(target Ref, attempt int, due time.Time)
	// Succeeded closes an eviction: the actuator did its work, the target was already gone,
	// or (dryRun) the actuator would have been called. due is as for Started.
	Succeeded(target Ref, attempt int, due time.Time, dryRun bool)
	// Failed: the actuator, or a lookup of the recheck before it, failed; the eviction
	// stays open and another attempt follows after the backoff, unless a closing report
	// comes first.
	Failed(target Ref, attempt int, err error)
	// Delayed: the eviction is due but waits, for a token of a rate limit
	// ([ReasonRateLimited]) or for the brake to release ([ReasonPaused]); it stays pending.
	// Reported when the reason changes, and only before the first attempt: an eviction
	// whose recheck failed keeps its place at the gate for its retry.
	Delayed(target Ref, reason Reason)
}

// NopObserver implements [Observer] with methods that do nothing. Its zero value is ready
// to use; embed it to implement only some methods.
type NopObserver struct{}

var _ Observer = NopObserver{}

// Scheduled does nothing.
func (NopObserver) Scheduled(Ref, time.Time) {}

// Cancelled does nothing.
func (NopObserver) Cancelled(Ref, Reason) {}

// Skipped does nothing.
func (NopObserver) Skipped(Ref, Reason) {}

// Started does nothing.
func (NopObserver) Started(Ref, int, time.Time) {}

// Succeeded does nothing.
func (NopObserver) Succeeded(Ref, int, time.Time, bool) {}

// Failed does nothing.
func (NopObserver) Failed(Ref, int, error) {}

// Delayed does nothing.
func (NopObserver) Delayed(Ref, Reason) {}

// Observers is an [Observer] that tells each of its observers every decision, in order. It
// is as safe for concurrent use as its observers are; a nil or empty Observers tells no
// one.
type Observers []Observer

var _ Observer = Observers(nil)

// Scheduled tells each observer.
func (obs Observers) Scheduled(target Ref, at time.Time) {
	for _, o := range obs {
		o.Scheduled(target, at)
	}
}

// Cancelled tells each observer.
func (obs Observers) Cancelled(target Ref, reason Reason) {
	for _, o := range obs {
		o.Cancelled(target, reason)
	}
}

// Skipped tells each observer.
func (obs Observers) Skipped(target Ref, reason Reason) {
	for _, o := range obs {
		o.Skipped(target, reason)
	}
}

// Started tells each observer.
func (obs Observers) Started(target Ref, attempt int, due time.Time) {
	for _, o := range obs {
		o.Started(target, attempt, due)
	}
}

// Succeeded tells each observer.
func (obs Observers) Succeeded(target Ref, attempt int, due time.Time, dryRun bool) {
	for _, o := range obs {
		o.Succeeded(target, attempt, due, dryRun)
	}
}

// Failed tells each observer.
func (obs Observers) Failed(target Ref, attempt int, err error) {
	for _, o := range obs {
		o.Failed(target, attempt, err)
	}
}

// Delayed tells each observer.
func (obs Observers) Delayed(target Ref, reason Reason) {
	for _, o := range obs {
		o.Delayed(target, reason)
	}
}
