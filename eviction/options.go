package eviction

import "github.com/taintevict/taintevict/eviction/engine"

// Options configures a [Manager]. It is the engine's [engine.Options] (an alias: go doc
// shows the fields there, in the engine's words of holders, targets and actuators), whose
// zero value gives the documented defaults. For a Manager, a holder is a node, a target a
// pod, and the actuator the [Deleter]; the fields, in those words:
//
//   - Clock: the Manager's clock, for the deadlines and every timer (nil: the real clock).
//     On a fake clock, give the nodes' taints TimeAdded values of its time line.
//   - Workers: the goroutines that process node and pod updates, a node's before its pods'
//     (0: 8).
//   - ActWorkers, MaxActWorkers: how many Deleter calls run at once; 0 follows the API
//     server's throughput, up to MaxActWorkers (0: [engine.DefaultMaxActWorkers]); a
//     positive value pins it.
//   - ActTimeout: the bound of each Deleter call (0: [engine.DefaultActTimeout]; negative:
//     none).
//   - Backoff: the pace of the retries of a failed delete; an eviction is never dropped.
//   - Unreachable: says whether a Deleter's error means the API server could not be
//     reached, so that [Manager.RetryUnreachable] retries such evictions at once when it
//     answers again.
//   - Observer: told every decision about each pod's eviction (Events, metrics).
//   - Tolerations: how a pod's tolerations match its node's taints: kube's node rules (the
//     zero value); set Tolerations.ComparisonOperators for Lt and Gt.
//   - DeadlineSource: where a pod's countdown starts: [FromTimeAdded], the taint's
//     TimeAdded (the default), or [FromObservation], when the Manager first sees it (kube's).
//   - DryRun: delete nothing, report everything.
//   - RateLimit, TaintRateLimits: pods deleted a second, in all and per taint key.
//   - Brake: pause a taint key's evictions while more than a fraction (or a number) of the
//     nodes carry it, of the cluster or of a zone (topology.kubernetes.io/zone).
//   - Pauser: holds due evictions by budgets of the caller's, until [Manager.Resume].
//   - InFlight: pods deleted and not gone yet, at most.
//   - NamespaceLimit, OwnerLimit: pods of one namespace, or of one workload ([PodOwner]),
//     deleted within a span of time, at most.
//   - LoopDamping: a workload whose re-created pods are evicted again and again waits a
//     growing backoff.
//   - Confirm: a taint that would evict too large a share of the pods at once waits until
//     an operator confirms it on the node ([ConfirmAnnotation]).
type Options = engine.Options

// DeadlineSource says where an eviction's countdown starts; see [engine.DeadlineSource].
type DeadlineSource = engine.DeadlineSource

const (
	// FromTimeAdded, the default: a taint's countdown starts at the earlier of its
	// TimeAdded and the time the taint was first seen on that node; see
	// [engine.FromTimeAdded].
	FromTimeAdded = engine.FromTimeAdded
	// FromObservation is kube-controller-manager's rule: the countdown starts when the
	// Manager first schedules the pod's eviction; see [engine.FromObservation].
	FromObservation = engine.FromObservation
)

// Limit is a token bucket; see [engine.Limit]. The zero Limit limits nothing.
type Limit = engine.Limit

// Brake pauses the evictions caused by a taint key while more than a fraction of the nodes
// (of the cluster, or of a zone: the topology.kubernetes.io/zone label) carry it; see
// [engine.Brake]. The zero Brake never pauses.
type Brake = engine.Brake

// FullDisruption is what the evictions of a zone all of whose nodes carry a taint key do;
// see [engine.FullDisruption].
type FullDisruption = engine.FullDisruption

// InFlight bounds the evictions acted on whose pods are not gone yet; see
// [engine.InFlight].
type InFlight = engine.InFlight

// Window bounds the evictions of a namespace or of a workload within a span of time; see
// [engine.Window].
type Window = engine.Window

// LoopDamping slows down a workload whose re-created pods are evicted again and again; see
// [engine.LoopDamping]. A pod's workload is [PodOwner].
type LoopDamping = engine.LoopDamping

// Confirm holds a taint that would evict too many pods at once until an operator confirms
// it; see [engine.Confirm]. The Manager counts what each taint key would evict, from the
// node and pod updates it is given, when Confirm.Census is nil; an operator confirms a key
// on a node with the [ConfirmAnnotation]. It counts a node when its update arrives: a
// taint put on the nodes one after another (kubectl taint nodes --all) is counted as it
// spreads, so the pods that tolerate nothing on the first nodes may go before the count
// goes over the fraction; pods that tolerate the taint for a while (as the
// DefaultTolerationSeconds admission plugin has every pod tolerate the not-ready and
// unreachable taints for 300 s) are counted whole before they fall due.
type Confirm = engine.Confirm

// Backoff paces retries; see [engine.Backoff].
type Backoff = engine.Backoff

// Pending is one open eviction that waits, as [Manager.Pending] reports it; see
// [engine.Pending].
type Pending = engine.Pending

// Stats counts a Manager's evictions by where they stand; see [engine.Stats].
type Stats = engine.Stats
