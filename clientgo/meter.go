package clientgo

import (
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/eviction"
)

// Meter keeps the metrics of controllers ([Options.Metrics], and package clientgo/device's).
// Package clientgo/metrics implements it on a Prometheus registry; it is an interface here
// so that a program that keeps no metrics does not link Prometheus.
type Meter interface {
	// Instrument returns the Observer that keeps the metrics of the controller c
	// describes, once per controller; if it also implements [DeleteObserver], the
	// controller's Deleter tells it how each pod went. It fails when they cannot be kept.
	Instrument(c Instrumented) (eviction.Observer, error)
}

// Instrumented describes a controller to its [Meter].
type Instrumented struct {
	// Controller names the controller in its process ("node", "device"), for the labels.
	Controller string
	// Kube names the metrics of kube's controller that this one replaces, to keep too.
	Kube KubeMetrics
	// Clock is the controller's clock ([Options.Manager].Clock). nil means the real clock.
	Clock clock.PassiveClock
	// Stats, if not nil, reads the controller's evictions by where they stand.
	Stats func() eviction.Stats
	// ActWorkers, if not nil, says how many Deleter calls may run at once now.
	ActWorkers func() int
}

// KubeMetrics names the two metrics of one of kube's controllers that delete pods for
// taints: Subsystem + "_pod_deletions_total" and Subsystem +
// "_pod_deletion_duration_seconds", with the whole HELP lines kube-controller-manager
// serves. The zero KubeMetrics names none.
type KubeMetrics struct {
	Subsystem     string
	DeletionsHelp string
	DurationHelp  string
}

// NodeKubeMetrics are the metrics of kube's taint eviction controller, which a
// [Controller] keeps.
var NodeKubeMetrics = KubeMetrics{
	Subsystem:     "taint_eviction_controller",
	DeletionsHelp: "[ALPHA] Total number of Pods deleted by TaintEvictionController since its start.",
	DurationHelp:  "[ALPHA] Latency, in seconds, between the time when a taint effect has been activated for the Pod and its deletion via TaintEvictionController.",
}
