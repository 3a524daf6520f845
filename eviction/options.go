package eviction

import "github.com/taintevict/taintevict/eviction/engine"

// Options configures a [Manager]. It is the engine's [engine.Options] (go doc shows the
// fields there, in the engine's words), whose zero value gives the documented defaults.
// For a Manager, a holder is a node, a target a pod, and the actuator the [Deleter]:
//
//   - Clock: for the deadlines and every timer (nil: the real clock). On a fake clock,
//     give the nodes' taints TimeAdded values of its time line.
//   - Workers: the goroutines that process node and pod updates (0: 8).
//   - ActWorkers, MaxActWorkers: how many Deleter calls run at once; 0 follows the API
//     server's throughput, up to MaxActWorkers (0: [engine.DefaultMaxActWorkers]); a
//     positive value pins it.
//   - ActTimeout: the bound of each Deleter call (0: [engine.DefaultActTimeout]; negative:
//     none).
//   - Backoff: the pace of the retries of a failed delete.
//   - Unreachable: says whether a Deleter's error means the API server could not be
//     reached, for [Manager.RetryUnreachable].
//   - Observer: told every decision about each pod's eviction (Events, metrics).
//   - Tolerations: how tolerations match taints: kube's node rules (the zero value); set
//     ComparisonOperators for Lt and Gt.
//   - DeadlineSource: where a pod's countdown starts: [FromTimeAdded] (the default) or
//     [FromObservation] (kube's).
//   - DryRun: delete nothing, report everything.
//   - RateLimit, TaintRateLimits: pods deleted a second, in all and per taint key.
//   - Brake: pause a taint key's evictions while more than a fraction (or a number) of the
//     nodes carry it, of the cluster or of a zone (topology.kubernetes.io/zone).
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
	// FromTimeAdded, the default, is [engine.FromTimeAdded].
	FromTimeAdded = engine.FromTimeAdded
	// FromObservation, kube-controller-manager's rule, is [engine.FromObservation].
	FromObservation = engine.FromObservation
)

// Limit is a token bucket; see [engine.Limit]. The zero Limit limits nothing.
type Limit = engine.Limit

// Brake pauses the evictions caused by a taint key while too many nodes carry it; see
// [engine.Brake]. The zero Brake never pauses.
type Brake = engine.Brake

// FullDisruption is what the evictions of a fully tainted zone do; see
// [engine.FullDisruption].
type FullDisruption = engine.FullDisruption

// InFlight bounds the pods deleted and not gone yet; see [engine.InFlight].
type InFlight = engine.InFlight

// Window bounds the evictions of a namespace or of a workload within a span of time; see
// [engine.Window].
type Window = engine.Window

// LoopDamping slows down a workload ([PodOwner]) whose re-created pods are evicted again
// and again; see [engine.LoopDamping].
type LoopDamping = engine.LoopDamping

// Confirm holds a taint that would evict too many pods at once until an operator confirms
// it with the [ConfirmAnnotation] on the node; see [engine.Confirm]. When Confirm.Census
// is nil, the Manager counts what each taint key would evict from the updates it is given,
// a node when its update arrives: a taint put on the nodes one after another is counted
// as it spreads, so the pods that tolerate nothing on the first nodes may go before the
// count goes over the fraction; pods that tolerate it for a while (300 s for the not-ready
// and unreachable taints, by the DefaultTolerationSeconds admission plugin) are counted
// whole before they fall due.
type Confirm = engine.Confirm

// Backoff paces retries; see [engine.Backoff].
type Backoff = engine.Backoff

// Pending is one open eviction that waits, as [Manager.Pending] reports it; see
// [engine.Pending].
type Pending = engine.Pending

// Stats counts a Manager's evictions by where they stand; see [engine.Stats].
type Stats = engine.Stats
