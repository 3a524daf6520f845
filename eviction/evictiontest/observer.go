package evictiontest

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/taintevict/taintevict/eviction"
)

// Kind names an [eviction.Observer] method.
type Kind string

// The kinds of [Event].
const (
	Scheduled Kind = "Scheduled"
	Cancelled Kind = "Cancelled"
	Skipped   Kind = "Skipped"
	Started   Kind = "Started"
	Succeeded Kind = "Succeeded"
	Failed    Kind = "Failed"
	Delayed   Kind = "Delayed"
)

// Event is one call of an [eviction.Observer] method, as [Observer] records it.
type Event struct {
	Kind    Kind
	Pod     eviction.PodRef
	At      time.Time       // Scheduled; Started and Succeeded: the time the eviction was due
	Reason  eviction.Reason // Cancelled, Skipped, Delayed
	Attempt int             // Started, Succeeded, Failed: the Actuator call (Attempt.Call)
	DryRun  bool            // Succeeded
	Err     error           // Failed
}

// String returns a short line such as "Scheduled ns/pod at 10:05:00", "Cancelled ns/pod:
// Tolerated", "Started ns/pod (attempt 1)" or "Failed ns/pod (before a call): ERR".
func (e Event) String() string {
	head := fmt.Sprintf("%s %s", e.Kind, e.Pod)
	switch {
	case e.Kind == Scheduled:
		return head + " at " + e.At.Format(time.TimeOnly)
	case e.Kind == Cancelled || e.Kind == Skipped || e.Kind == Delayed:
		return fmt.Sprintf("%s: %s", head, e.Reason)
	case e.Kind == Failed && e.Attempt == 0:
		return fmt.Sprintf("%s (before a call): %v", head, e.Err)
	case e.Kind == Failed:
		return fmt.Sprintf("%s (attempt %d): %v", head, e.Attempt, e.Err)
	case e.Kind == Succeeded && e.DryRun:
		return head + " (dry run)"
	}
	return fmt.Sprintf("%s (attempt %d)", head, e.Attempt)
}

// Observer is an [eviction.Observer] that records every call. The zero value is ready to
// use.
type Observer struct {
	mu     sync.Mutex
	events []Event
}

var _ eviction.Observer = (*Observer)(nil)

func (o *Observer) add(e Event) {
	o.mu.Lock()
	o.events = append(o.events, e)
	o.mu.Unlock()
}

// Events returns a copy of the events recorded so far, in order.
func (o *Observer) Events() []Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Event(nil), o.events...)
}

// Of returns the events of kind k, in order.
func (o *Observer) Of(k Kind) []Event {
	return slices.DeleteFunc(o.Events(), func(e Event) bool { return e.Kind != k })
}

// Reset forgets the events recorded so far.
func (o *Observer) Reset() {
	o.mu.Lock()
	o.events = nil
	o.mu.Unlock()
}

// Scheduled records a Scheduled event.
func (o *Observer) Scheduled(pod eviction.PodRef, at time.Time) {
	o.add(Event{Kind: Scheduled, Pod: pod, At: at})
}

// Cancelled records a Cancelled event.
func (o *Observer) Cancelled(pod eviction.PodRef, reason eviction.Reason) {
	o.add(Event{Kind: Cancelled, Pod: pod, Reason: reason})
}

// Skipped records a Skipped event.
func (o *Observer) Skipped(pod eviction.PodRef, reason eviction.Reason) {
	o.add(Event{Kind: Skipped, Pod: pod, Reason: reason})
}

// Delayed records a Delayed event.
func (o *Observer) Delayed(pod eviction.PodRef, reason eviction.Reason) {
	o.add(Event{Kind: Delayed, Pod: pod, Reason: reason})
}

// Started records a Started event.
func (o *Observer) Started(pod eviction.PodRef, a eviction.Attempt) {
	o.add(Event{Kind: Started, Pod: pod, At: a.Due, Attempt: a.Call})
}

// Succeeded records a Succeeded event.
func (o *Observer) Succeeded(pod eviction.PodRef, a eviction.Attempt, dryRun bool) {
	o.add(Event{Kind: Succeeded, Pod: pod, At: a.Due, Attempt: a.Call, DryRun: dryRun})
}

// Failed records a Failed event.
func (o *Observer) Failed(pod eviction.PodRef, a eviction.Attempt, err error) {
	o.add(Event{Kind: Failed, Pod: pod, Attempt: a.Call, Err: err})
}
