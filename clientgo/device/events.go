package device

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// Kube's device taint eviction controller: its name (the Events' source, the field manager
// of the rules' status), the reason of its Events, and the condition it sets on a pod
// before deleting it.
const (
	Component         = "device-taint-eviction-controller"
	EventReason       = "DeviceTaintManagerEviction"
	DisruptionReason  = "DeletionByDeviceTaintManager"
	DisruptionMessage = "Device Taint manager: deleting due to NoExecute taint"
)

// PausedMessage is the message of the Event [EventObserver] records when the brake or a
// Pauser holds a pod's eviction back.
const PausedMessage = "Pausing deletion: a budget holds back the evictions of the device taint"

// ConfirmMessage is the message of the Event [EventObserver] records when Confirm holds a
// pod's eviction back until an operator confirms the taint.
const ConfirmMessage = "Pausing deletion: the device taint would evict too many pods at once; annotate its DeviceTaintRule (or ResourceSlice) with " +
	eviction.ConfirmAnnotation + "=<taint key> to confirm it"

// EventObserver is the engine.Observer that records, on the pod, the Events kube's device
// taint eviction controller records, with the same type, reason and messages: "Marking for
// deletion" when the pod is first acted on, "Cancelling deletion" when a pending eviction
// is cancelled (not when the pod is gone); and two of its own, [PausedMessage] when the
// brake or a Pauser pauses the eviction, [ConfirmMessage] when Confirm holds it (once per
// hold). Retries record nothing. The Events carry
// the pod's UID.
//
// Its methods are safe for concurrent use and never block. The zero EventObserver records
// nothing.
type EventObserver struct {
	engine.NopObserver
	// Recorder records the Events; nil records none.
	Recorder record.EventRecorder
}

var _ engine.Observer = EventObserver{}

// Cancelled records "Cancelling deletion", except for a pod that is gone (deleted, or
// replaced under its name), about which kube records nothing.
func (o EventObserver) Cancelled(pod engine.Ref, reason engine.Reason) {
	if reason != engine.ReasonTargetDeleted && reason != engine.ReasonReplaced {
		o.event(pod, "Cancelling deletion")
	}
}

// Started records "Marking for deletion" before the first Deleter call.
func (o EventObserver) Started(pod engine.Ref, a engine.Attempt) {
	if a.First() {
		o.event(pod, "Marking for deletion")
	}
}

// Delayed records [PausedMessage] when the reason is engine.ReasonPaused, and
// [ConfirmMessage] when it is engine.ReasonUnconfirmed.
func (o EventObserver) Delayed(pod engine.Ref, reason engine.Reason) {
	switch reason {
	case engine.ReasonPaused:
		o.event(pod, PausedMessage)
	case engine.ReasonUnconfirmed:
		o.event(pod, ConfirmMessage)
	}
}

func (o EventObserver) event(pod engine.Ref, msg string) {
	if o.Recorder != nil {
		ref := &v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
		o.Recorder.Event(ref, v1.EventTypeNormal, EventReason, msg)
	}
}
