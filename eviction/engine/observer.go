package engine

import "time"

// Observer is told everything an [Engine] decides, for Events, metrics and logs. Its
// methods are called synchronously from the Engine's goroutines, several at once (never
// two for one target), under the target's lock: they must be safe for concurrent use,
// return quickly, and not call the Engine. One that panics stops the Engine ([PanicError]).
// Embed [NopObserver] to implement only some.
//
// The reports about one target come in the order of the decisions. An eviction is open
// from its first Scheduled until exactly one closing report: Succeeded, Cancelled or
// Skipped. While it is open, and only then, Scheduled may come again, and Delayed, Started
// and Failed may come. Every Started is followed by exactly one Succeeded, Failed,
// Cancelled or Skipped. So counting +1 on a target's first Scheduled and -1 on its closing
// report agrees with [Engine.Stats] whenever the Engine is idle.
type Observer interface {
	// Scheduled: the target will be acted on at the given time (at or before now: at once).
	// It opens the eviction, or moves an open one.
	Scheduled(target Ref, at time.Time)
	// Delayed: the eviction is due but waits at a budget, for reason. Reported when the
	// reason changes, before the first Actuator call; and before a retry for the budgets
	// that hold retries too (Paused, Unconfirmed, NotSynced).
	Delayed(target Ref, reason Reason)
	// Started: the Actuator is about to be called (never in dry-run mode) for a.Call.
	Started(target Ref, a Attempt)
	// Failed: the Actuator call a.Call failed, or (a.Call 0) a lookup of the recheck right
	// before a call did. Another attempt follows after the backoff, unless a closing report
	// comes first.
	Failed(target Ref, a Attempt, err error)
	// Succeeded closes an eviction: the call a.Call did its work or found the target gone,
	// or (dryRun, a.Call 0) the Actuator would have been called.
	Succeeded(target Ref, a Attempt, dryRun bool)
	// Cancelled closes an eviction no longer wanted: the target was deleted or replaced,
	// its holders untainted or deleted, or it tolerates their taints now. While a call runs,
	// it is reported when the call ends, in place of Failed (a success reports Succeeded).
	Cancelled(target Ref, reason Reason)
	// Skipped closes an eviction whose target is leaving on its own, for its
	// [Target.Leaving]; while a call runs, as for Cancelled.
	Skipped(target Ref, reason Reason)
}

// Attempt is one try at an eviction, as [Observer.Started], [Observer.Failed] and
// [Observer.Succeeded] report it.
type Attempt struct {
	// Call numbers the eviction's Actuator calls from 1; 0 for no call (a failed recheck, a
	// dry run).
	Call int
	// Due is when the eviction was scheduled for, as Scheduled last reported it: a wait at
	// a budget or for a retry does not move it, so the first call's lateness is its Started
	// less Due.
	Due time.Time
}

// First reports whether a is the eviction's first Actuator call.
func (a Attempt) First() bool { return a.Call == 1 }

// NopObserver implements [Observer] with methods that do nothing; its zero value is ready.
type NopObserver struct{}

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
// is as safe for concurrent use as they are; a nil Observers tells no one.
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
