package controllerruntime

import (
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
)

// Options configures a [Controller]: those of [clientgo.Options] that apply inside a
// controller-runtime manager, with the same meaning. The zero value deletes as kube does,
// with the Manager's defaults, kube's Events, no metrics, and only while the manager leads.
type Options struct {
	// Mode is how pods are removed; "" means [clientgo.ModeDelete]. [clientgo.ModeEvict]
	// honours PodDisruptionBudgets; [clientgo.ModeDryRun] removes nothing and records no
	// Events (the metrics and Observers still hear every decision).
	Mode clientgo.Mode
	// PDBTimeout is [clientgo.EvictionDeleterOptions.PDBTimeout], for ModeEvict.
	PDBTimeout time.Duration
	// Manager is the Manager's options, every one of them (workers, delete timeout,
	// Backoff, DeadlineSource, the budgets against mass eviction...), with the rules of
	// [clientgo.Options].Manager: Manager.DryRun must be false (Mode says it); Manager.Clock
	// is the Controller's one clock (the Manager's, the Deleters', the Events', the
	// metrics'; nil means the real one), while the manager's leader election runs on the
	// real clock; Manager.Observer, if not nil, is told every decision after the Events and
	// the metrics, and before Observers.
	Manager eviction.Options
	// Observers are told every decision too, after Manager.Observer. Those that also
	// implement [clientgo.DeleteObserver] are told how each pod went.
	Observers []eviction.Observer
	// WrapDeleter, if not nil, wraps the Deleter the Mode chose. It is not called in
	// ModeDryRun.
	WrapDeleter func(eviction.Deleter) eviction.Deleter
	// Metrics, if not nil, keeps the controller's metrics, under kube's taint eviction
	// controller's names ([clientgo.NodeKubeMetrics]) and taintevict's, for the controller
	// "node". Give it the Meter of package clientgo/metrics on controller-runtime's
	// registry, metrics.NewMeter(sigs.k8s.io/controller-runtime/pkg/metrics.Registry), and
	// the manager's metrics server serves them beside its own. nil keeps none.
	Metrics clientgo.Meter
	// EventClient, if not nil, is the client the Events are written through; nil means a
	// client of the manager's rest.Config and HTTP client. Give it a rate limiter of its
	// own so that the Events never take the tokens of an eviction's requests (see
	// [clientgo.EventWriter]).
	EventClient kubernetes.Interface
	// NeedLeaderElection, if not nil and false, runs the Controller on every replica from
	// the manager's start, whether or not it leads: each replica then evicts. nil means
	// true: the Controller runs only while the manager leads (and at once on a manager
	// without leader election).
	NeedLeaderElection *bool
	// ReadyzCheck names the readiness check the Controller adds to the manager; "" means
	// "taint-eviction".
	ReadyzCheck string
}

// defaultReadyzCheck is the readiness check's name when Options.ReadyzCheck is "".
const defaultReadyzCheck = "taint-eviction"
