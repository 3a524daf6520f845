package device

import (
	"github.com/taintevict/taintevict/clientgo"
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

// PausedMessage is the message of the Event a [Controller] records when the brake holds a
// pod's eviction back.
const PausedMessage = "Pausing deletion: a budget holds back the evictions of the device taint"

// ConfirmMessage is the message of the Event a [Controller] records when Confirm holds a
// pod's eviction back until an operator confirms the taint.
const ConfirmMessage = "Pausing deletion: the device taint would evict too many pods at once; annotate its DeviceTaintRule (or ResourceSlice) with " +
	eviction.ConfirmAnnotation + "=<taint key> to confirm it"

// Events are kube's device taint eviction controller's Events, which a [Controller]
// records with a [clientgo.EventObserver], at the moments that type says:
//
//   - "Marking for deletion";
//   - "Cancelling deletion", for an eviction cancelled for any reason but the pod's
//     deletion or replacement under its name, about which kube records nothing;
//   - ours, [PausedMessage] and [ConfirmMessage].
var Events = clientgo.Events{
	Reason:     EventReason,
	Marking:    func(engine.Ref) string { return "Marking for deletion" },
	Cancelling: func(engine.Ref) string { return "Cancelling deletion" },
	Pausing:    func(engine.Ref) string { return PausedMessage },
	Confirming: func(engine.Ref) string { return ConfirmMessage },
	Cancels: func(reason engine.Reason) bool {
		return reason != engine.ReasonTargetDeleted && reason != engine.ReasonReplaced
	},
}

// KubeMetrics are the metrics of kube's device taint eviction controller
// (pkg/controller/devicetainteviction/metrics), which a [Controller] with Options.Metrics
// keeps under kube's names (see [clientgo.KubeMetrics]).
var KubeMetrics = clientgo.KubeMetrics{
	Subsystem:     "device_taint_eviction_controller",
	DeletionsHelp: "[ALPHA] Total number of Pods deleted by DeviceTaintEvictionController since its start.",
	DurationHelp:  "[ALPHA] Latency, in seconds, between the time when a device taint effect has been activated and a Pod's deletion via DeviceTaintEvictionController.",
}
