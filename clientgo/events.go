package clientgo

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/taintevict/taintevict/eviction"
)

// Component is the source of the controller's Events: kube's.
const Component = "taint-eviction-controller"

// EventReason is the reason of the Events kube's taint eviction controller records.
const EventReason = "TaintManagerEviction"

// PausedMessage ends the Event of [NodeEvents] recorded when the brake holds evictions.
const PausedMessage = "the brake holds evictions back: too many nodes carry the taint"

// ConfirmMessage ends the Event of [NodeEvents] recorded when Confirm holds an eviction.
const ConfirmMessage = "the taint would evict too many pods at once; confirm it with the annotation " + eviction.ConfirmAnnotation + "=<taint key> on the node"

// Events are the Events an [EventObserver] records: those of one of kube's controllers
// ([NodeEvents]; package clientgo/device has the device taint eviction controller's).
type Events struct {
	// Reason is the reason of every Event.
	Reason string
	// Marking, Cancelling, Pausing and Confirming return the message of the Event about
	// pod: found; cancelled; paused by the brake; held by Confirm (nil records none).
	Marking, Cancelling, Pausing, Confirming func(pod eviction.PodRef) string
	// Cancels reports whether an eviction cancelled for reason gets the Cancelling Event.
	Cancels func(reason eviction.Reason) bool
}

// NodeEvents are kube's taint eviction controller's Events: "Marking for deletion Pod
// ns/name"; "Cancelling deletion of Pod ns/name", for an eviction cancelled for any reason
// but the node's deletion and the pod's replacement, as kube; and ours, "Pausing deletion
// of Pod ns/name: " and [PausedMessage] or [ConfirmMessage].
var NodeEvents = Events{
	Reason:     EventReason,
	Marking:    func(pod eviction.PodRef) string { return "Marking for deletion Pod " + podName(pod) },
	Cancelling: func(pod eviction.PodRef) string { return "Cancelling deletion of Pod " + podName(pod) },
	Pausing:    func(pod eviction.PodRef) string { return pausing(pod, PausedMessage) },
	Confirming: func(pod eviction.PodRef) string { return pausing(pod, ConfirmMessage) },
	Cancels: func(reason eviction.Reason) bool {
		return reason != eviction.ReasonNodeDeleted && reason != eviction.ReasonPodReplaced
	},
}

func podName(pod eviction.PodRef) string { return pod.Namespace + "/" + pod.Name }

func pausing(pod eviction.PodRef, why string) string {
	return "Pausing deletion of Pod " + podName(pod) + ": " + why
}

// EventObserverOptions configures an [EventObserver]. The zero value records
// [NodeEvents].
type EventObserverOptions struct {
	Events Events // the Events to record; the zero Events means NodeEvents
}

// EventObserver is the [eviction.Observer] (and [DeleteObserver]) that records on the pod
// the Events of one of kube's controllers ([Events]), at the same moments: Marking, once
// per eviction, when the Deleter's request first finds the pod ([DeleteObserver.Found]),
// so it must be the Deleter's Observer too; Cancelling, when a pending eviction is
// cancelled for a reason [Events].Cancels accepts. And ours: Pausing when the brake holds
// a due eviction back, Confirming when Confirm does, once per pause. Retries record no
// Event. The Events' object references carry the pod's UID.
//
// Its methods are safe for concurrent use and never block. It keeps one entry per eviction
// whose pod was found and that has not ended yet. The zero EventObserver is not usable:
// create one with [NewEventObserver].
type EventObserver struct {
	eviction.NopObserver // Scheduled, Started and Failed record nothing
	recorder             record.EventRecorder
	events               Events

	mu     sync.Mutex
	marked map[types.UID]struct{} // Marking recorded, the eviction not ended
}

var _ DeleteObserver = (*EventObserver)(nil)

// NewEventObserver returns the EventObserver that records through recorder (nil: none).
func NewEventObserver(recorder record.EventRecorder, opts EventObserverOptions) *EventObserver {
	if opts.Events.Reason == "" {
		opts.Events = NodeEvents
	}
	return &EventObserver{recorder: recorder, events: opts.Events, marked: map[types.UID]struct{}{}}
}

// Found records Marking, once per eviction.
func (o *EventObserver) Found(pod eviction.PodRef) {
	o.mu.Lock()
	_, done := o.marked[pod.UID]
	o.marked[pod.UID] = struct{}{}
	o.mu.Unlock()
	if !done {
		o.event(pod, o.events.Marking(pod))
	}
}

// Removed ends the eviction: the Deleter removed the pod or found it gone.
func (o *EventObserver) Removed(pod eviction.PodRef, _ Method, _ bool) { o.end(pod) }

// Cancelled records Cancelling, if Events.Cancels says so, and ends the eviction.
func (o *EventObserver) Cancelled(pod eviction.PodRef, reason eviction.Reason) {
	o.end(pod)
	if o.events.Cancels(reason) {
		o.event(pod, o.events.Cancelling(pod))
	}
}

// Delayed records Pausing for [eviction.ReasonPaused], Confirming for ReasonUnconfirmed.
func (o *EventObserver) Delayed(pod eviction.PodRef, reason eviction.Reason) {
	switch {
	case reason == eviction.ReasonPaused:
		o.event(pod, o.events.Pausing(pod))
	case reason == eviction.ReasonUnconfirmed && o.events.Confirming != nil:
		o.event(pod, o.events.Confirming(pod))
	}
}

// Succeeded ends the eviction.
func (o *EventObserver) Succeeded(pod eviction.PodRef, _ eviction.Attempt, _ bool) { o.end(pod) }

// Skipped ends the eviction.
func (o *EventObserver) Skipped(pod eviction.PodRef, _ eviction.Reason) { o.end(pod) }

// end forgets that the eviction's Marking was recorded.
func (o *EventObserver) end(pod eviction.PodRef) {
	o.mu.Lock()
	delete(o.marked, pod.UID)
	o.mu.Unlock()
}

func (o *EventObserver) event(pod eviction.PodRef, msg string) {
	if o.recorder == nil {
		return
	}
	ref := &v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	o.recorder.Event(ref, v1.EventTypeNormal, o.events.Reason, msg)
}
