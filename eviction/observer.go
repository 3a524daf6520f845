package eviction

import "github.com/taintevict/taintevict/eviction/engine"

// Observer is told everything a [Manager] decides (for Events, metrics and logs): the
// engine's [engine.Observer], with each pod as a [PodRef] whose Holder is its node.
type Observer = engine.Observer

// Attempt is one try at an eviction; see [engine.Attempt].
type Attempt = engine.Attempt

// NopObserver implements [Observer] with methods that do nothing; see [engine.NopObserver].
type NopObserver = engine.NopObserver

// Observers tells each of its observers every decision, in order; see [engine.Observers].
type Observers = engine.Observers

// Reason says why an eviction was cancelled or skipped, or why a due one waits; see
// [engine.Reason]. The constants name the engine's reasons for pods on nodes, and add a
// pod's own reasons for leaving.
type Reason = engine.Reason

// Reasons given to [engine.Observer.Cancelled].
const (
	// ReasonNotTainted: the pod's node has no NoExecute taint (any more), or is not known.
	ReasonNotTainted = engine.ReasonNotTainted
	// ReasonTolerated: the pod tolerates every NoExecute taint of its node forever.
	ReasonTolerated = engine.ReasonTolerated
	// ReasonNodeDeleted: the pod's node was deleted.
	ReasonNodeDeleted = engine.ReasonHolderDeleted
	// ReasonPodDeleted: the pod was deleted.
	ReasonPodDeleted = engine.ReasonTargetDeleted
	// ReasonPodUnbound: the pod is no longer bound to a node.
	ReasonPodUnbound = engine.ReasonUnbound
	// ReasonPodReplaced: a pod of the same name but another UID stands in the cache.
	ReasonPodReplaced = engine.ReasonReplaced
)

// Reasons given to [engine.Observer.Skipped]: a pod's own reasons to leave, from [LeavingReason].
const (
	// ReasonPodFinished: the pod has succeeded or failed; its containers no longer run.
	ReasonPodFinished Reason = "PodFinished"
	// ReasonPodTerminating: the pod is already being deleted.
	ReasonPodTerminating Reason = "PodTerminating"
)

// Reasons given to [engine.Observer.Delayed]: what an eviction that is due waits for.
const (
	// ReasonRateLimited: a token of Options.RateLimit, or of its taint's TaintRateLimits.
	ReasonRateLimited = engine.ReasonRateLimited
	// ReasonPaused: Options.Brake to let its taint go.
	ReasonPaused = engine.ReasonPaused
	// ReasonInFlight: a pod in flight to be gone (Options.InFlight).
	ReasonInFlight = engine.ReasonInFlight
	// ReasonNamespaceLimit: its namespace's window (Options.NamespaceLimit).
	ReasonNamespaceLimit = engine.ReasonNamespaceLimit
	// ReasonOwnerLimit: its workload's window (Options.OwnerLimit).
	ReasonOwnerLimit = engine.ReasonOwnerLimit
	// ReasonRecreated: the backoff of a pod that re-created one evicted a moment ago
	// (Options.LoopDamping).
	ReasonRecreated = engine.ReasonRecreated
	// ReasonUnconfirmed: an operator's [ConfirmAnnotation] for a taint that would evict too
	// many pods at once (Options.Confirm).
	ReasonUnconfirmed = engine.ReasonUnconfirmed
)
