package device

import "github.com/taintevict/taintevict/clientgo"

// KubeMetrics are the metrics of kube's device taint eviction controller
// (pkg/controller/devicetainteviction/metrics, v1.37), which a [Controller] with
// Options.Metrics keeps under kube's names, HELP lines (with the [ALPHA] stability prefix
// kube's metrics framework adds) and buckets:
// device_taint_eviction_controller_pod_deletions_total and
// device_taint_eviction_controller_pod_deletion_duration_seconds (from each pod's deadline
// to the end of its deletion; a pod found gone is not counted, as in kube).
var KubeMetrics = clientgo.KubeMetrics{
	Subsystem:     "device_taint_eviction_controller",
	DeletionsHelp: "[ALPHA] Total number of Pods deleted by DeviceTaintEvictionController since its start.",
	DurationHelp:  "[ALPHA] Latency, in seconds, between the time when a device taint effect has been activated and a Pod's deletion via DeviceTaintEvictionController.",
}
