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
// Engine is idle, with [Engine.Stats]. A target that is leaving, or that the Engine has
// acted on already, and that has no open eviction, is not reported at all.
type Observer interface {
	// Scheduled: the target will be acted on at the given time (now or before for an
	// eviction that is due at once). It opens the eviction, or moves an open one.
	Scheduled(target Ref, at time.Time)
	// Delayed: the eviction is due but waits at a budget: for a token of a rate limit
	// ([ReasonRateLimited]), for the brake to release it ([ReasonPaused]),
	// for an eviction in flight to end ([ReasonInFlight]), for the window of its namespace
	// or owner ([ReasonNamespaceLimit], [ReasonOwnerLimit]), for its loop backoff
	// ([ReasonRecreated]), for an operator to confirm its taint ([ReasonUnconfirmed]), or
	// for the Engine to be Synced ([ReasonNotSynced]); it stays pending. Reported when the
	// reason changes, before the first Actuator call; and before a retry, for the budgets
	// that hold retries too, as they hold while a condition lasts (Paused, Unconfirmed,
	// NotSynced): a retry is not let go while the brake holds.
	Delayed(target Ref, reason Reason)
	// Started: the Actuator is about to be called (never in dry-run mode), for the call
	// a.Call; a.First() is true for the eviction's first call.
	Started(target Ref, a Attempt)
	// Failed: the Actuator call a.Call failed, or (a.Call 0) a lookup of the recheck right
	// before a call failed, so that no call was made. The eviction stays open and another
	// attempt follows after the backoff, unless a closing report comes first.
	Failed(target Ref, a Attempt, err error)
	// Succeeded closes an eviction: the Actuator call a.Call did its work or found the
	// target gone, or (dryRun, a.Call 0) the Actuator would have been called.
	Succeeded(target Ref, a Attempt, dryRun bool)
	// Cancelled closes an eviction that is no longer wanted: the target was deleted or
	// replaced, its holders were untainted or deleted, or it tolerates their taints now.
	// When that happens while a call runs, it is reported when the call ends, instead of
	// Failed; a call that succeeds reports Succeeded instead.
	Cancelled(target Ref, reason Reason)
	// Skipped closes an eviction whose target turned out to be leaving on its own: reason
	// is the [Target.Leaving] the Source gave. As for Cancelled, a call that runs reports
	// it when it ends.
	Skipped(target Ref, reason Reason)
}

// Attempt is one try at an eviction, as [Observer.Started], [Observer.Failed] and
// [Observer.Succeeded] report it.
type Attempt struct {
	// Call numbers the Actuator calls of the eviction, from 1. It is 0 in a report about
	// no call: a Failed for a recheck whose lookup failed before the call, and a dry-run
	// Succeeded.
	Call int
	// Due is when the eviction was scheduled for, as Scheduled last reported it: a wait
	// at a budget, or for a retry, does not move it. The lateness of the first call is
	// the time of its Started less Due.
	Due time.Time
}

// First reports whether a is the eviction's first Actuator call.
func (a Attempt) First() bool { return a.Call == 1 }

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
func (NopObserver) Started(Ref, Attempt) {}

// Succeeded does nothing.
func (NopObserver) Succeeded(Ref, Attempt, bool) {}

// Failed does nothing.
func (NopObserver) Failed(Ref, Attempt, error) {}

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
func (obs Observers) Started(target Ref, a Attempt) {
	for _, o := range obs {
		o.Started(target, a)
	}
}

// Succeeded tells each observer.
func (obs Observers) Succeeded(target Ref, a Attempt, dryRun bool) {
	for _, o := range obs {
		o.Succeeded(target, a, dryRun)
	}
}

// Failed tells each observer.
func (obs Observers) Failed(target Ref, a Attempt, err error) {
	for _, o := range obs {
		o.Failed(target, a, err)
	}
}

// Delayed tells each observer.
func (obs Observers) Delayed(target Ref, reason Reason) {
	for _, o := range obs {
		o.Delayed(target, reason)
	}
}
