package evictiontest

import (
	"fmt"
	"sync"
	"time"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
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
	Attempt int             // Started, Succeeded, Failed
	DryRun  bool            // Succeeded
	Err     error           // Failed
}

// String returns a short line such as "Scheduled ns/pod at 10:05:00",
// "Cancelled ns/pod: Tolerated" or "Delayed ns/pod: RateLimited".
func (e Event) String() string {
	switch e.Kind {
	case Scheduled:
		return fmt.Sprintf("%s %s at %s", e.Kind, e.Pod, e.At.Format(time.TimeOnly))
	case Cancelled, Skipped, Delayed:
		return fmt.Sprintf("%s %s: %s", e.Kind, e.Pod, e.Reason)
	case Failed:
		return fmt.Sprintf("%s %s (attempt %d): %v", e.Kind, e.Pod, e.Attempt, e.Err)
	case Succeeded:
		if e.DryRun {
			return fmt.Sprintf("%s %s (attempt %d, dry run)", e.Kind, e.Pod, e.Attempt)
		}
	}
	return fmt.Sprintf("%s %s (attempt %d)", e.Kind, e.Pod, e.Attempt)
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
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Event
	for _, e := range o.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
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

// Started records a Started event.
func (o *Observer) Started(pod eviction.PodRef, attempt int, due time.Time) {
	o.add(Event{Kind: Started, Pod: pod, At: due, Attempt: attempt})
}

// Succeeded records a Succeeded event.
func (o *Observer) Succeeded(pod eviction.PodRef, attempt int, due time.Time, dryRun bool) {
	o.add(Event{Kind: Succeeded, Pod: pod, At: due, Attempt: attempt, DryRun: dryRun})
}

// Failed records a Failed event.
func (o *Observer) Failed(pod eviction.PodRef, attempt int, err error) {
	o.add(Event{Kind: Failed, Pod: pod, Attempt: attempt, Err: err})
}

// Delayed records a Delayed event.
func (o *Observer) Delayed(pod eviction.PodRef, reason eviction.Reason) {
	o.add(Event{Kind: Delayed, Pod: pod, Reason: reason})
}

// Recorder is an [engine.Observer] that records every call, as [Observer] does for a
// Manager: each [Event] names the target in Pod, with the holder as Pod.Node, and carries
// the engine's own reasons. The zero value is ready to use.
type Recorder struct {
	Observer
}

var _ engine.Observer = (*Recorder)(nil)

func podOf(t engine.Ref) eviction.PodRef {
	return eviction.PodRef{Namespace: t.Namespace, Name: t.Name, UID: t.UID, Node: t.Holder}
}

// Scheduled records a Scheduled event.
func (r *Recorder) Scheduled(t engine.Ref, at time.Time) { r.Observer.Scheduled(podOf(t), at) }

// Cancelled records a Cancelled event.
func (r *Recorder) Cancelled(t engine.Ref, reason engine.Reason) {
	r.Observer.Cancelled(podOf(t), reason)
}

// Skipped records a Skipped event.
func (r *Recorder) Skipped(t engine.Ref, reason engine.Reason) { r.Observer.Skipped(podOf(t), reason) }

// Started records a Started event.
func (r *Recorder) Started(t engine.Ref, attempt int, due time.Time) {
	r.Observer.Started(podOf(t), attempt, due)
}

// Succeeded records a Succeeded event.
func (r *Recorder) Succeeded(t engine.Ref, attempt int, due time.Time, dryRun bool) {
	r.Observer.Succeeded(podOf(t), attempt, due, dryRun)
}

// Failed records a Failed event.
func (r *Recorder) Failed(t engine.Ref, attempt int, err error) {
	r.Observer.Failed(podOf(t), attempt, err)
}

// Delayed records a Delayed event.
func (r *Recorder) Delayed(t engine.Ref, reason engine.Reason) { r.Observer.Delayed(podOf(t), reason) }
