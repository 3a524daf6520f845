package clientgo

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/taintevict/taintevict/eviction"
)

// Component is the event source of the controller's Events: what `kubectl get events`
// shows in its SOURCE column. It is kube's.
const Component = "taint-eviction-controller"

// EventReason is the reason of the Events kube-controller-manager's taint eviction
// controller records; tools and people that filter on it see this controller's Events too.
const EventReason = "TaintManagerEviction"

// EventObserver is the [eviction.Observer] that records, on the pod, the two Events
// kube-controller-manager's taint eviction controller records, with the same type, reason
// and messages:
//
//   - "Marking for deletion Pod ns/name" when the Deleter is first called for the pod;
//   - "Cancelling deletion of Pod ns/name" when a pending eviction is cancelled;
//
// and one of its own, which kube's controller has no cause for: "Pausing deletion of Pod
// ns/name: " and [PausedMessage], when the brake (eviction.Options.Brake) holds a due
// eviction back, or [ConfirmMessage], naming the annotation that confirms the taint, when
// eviction.Options.Confirm holds it. The Manager reports a delay only when its reason
// changes, so that is one Event per pause, not one per look; a wait for another budget (a
// rate limit, evictions in flight, a window) records none (it is routine; the metrics
// count it).
//
// Retries record no Event, so that a failing API server does not fill the pod's Events with
// copies. The Events' object references carry the pod's UID, so that they belong to this
// pod and not to one re-created under its name.
//
// Its methods are safe for concurrent use and never block: recording an Event only queues
// it, and the recorder's broadcaster writes it to the API server from its own goroutine.
// The zero EventObserver records nothing.
type EventObserver struct {
	eviction.NopObserver
	// Recorder records the Events; nil records none.
	Recorder record.EventRecorder
}

var _ eviction.Observer = EventObserver{}

// Cancelled records "Cancelling deletion of Pod ns/name".
func (o EventObserver) Cancelled(pod eviction.PodRef, _ eviction.Reason) {
	o.event(pod, "Cancelling deletion of Pod ", "")
}

// PausedMessage ends the Event that [EventObserver] records when the brake holds an
// eviction back.
const PausedMessage = "the brake holds evictions back: too many nodes carry the taint"

// ConfirmMessage ends the Event that [EventObserver] records when eviction.Options.Confirm
// holds an eviction back until an operator confirms its taint.
const ConfirmMessage = "the taint would evict too many pods at once; confirm it with the annotation " + eviction.ConfirmAnnotation + "=<taint key> on the node"

// Delayed records "Pausing deletion of Pod ns/name: " and [PausedMessage] when the reason is
// eviction.ReasonPaused, or [ConfirmMessage] when it is eviction.ReasonUnconfirmed, and
// nothing for another reason.
func (o EventObserver) Delayed(pod eviction.PodRef, reason eviction.Reason) {
	switch reason {
	case eviction.ReasonPaused:
		o.event(pod, "Pausing deletion of Pod ", ": "+PausedMessage)
	case eviction.ReasonUnconfirmed:
		o.event(pod, "Pausing deletion of Pod ", ": "+ConfirmMessage)
	}
}

// Started records "Marking for deletion Pod ns/name" before the first Deleter call.
func (o EventObserver) Started(pod eviction.PodRef, a eviction.Attempt) {
	if a.First() {
		o.event(pod, "Marking for deletion Pod ", "")
	}
}

// event records the message before + "ns/name" + after on pod. The message is put
// together here rather than by the recorder's Eventf, which formats it with fmt at about
// twice the cost, once per evicted pod.
func (o EventObserver) event(pod eviction.PodRef, before, after string) {
	if o.Recorder == nil {
		return
	}
	ref := &v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	o.Recorder.Event(ref, v1.EventTypeNormal, EventReason, before+pod.Namespace+"/"+pod.Name+after)
}
