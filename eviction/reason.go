package eviction

import "github.com/taintevict/taintevict/eviction/engine"

// Reason says why an eviction was cancelled or skipped, or why a due one waits. It is the
// engine's [engine.Reason]; the constants below give the engine's reasons their names for
// pods on nodes, and add the reasons a pod gives for leaving on its own.
type Reason = engine.Reason

// Reasons given to [Observer.Cancelled].
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

// Reasons given to [Observer.Skipped]: a pod's own reasons to leave, from [LeavingReason].
const (
	// ReasonPodFinished: the pod has succeeded or failed; its containers no longer run.
	ReasonPodFinished Reason = "PodFinished"
	// ReasonPodTerminating: the pod is already being deleted.
	ReasonPodTerminating Reason = "PodTerminating"
)

// Reasons given to [Observer.Delayed]: why an eviction that is due waits.
const (
	// ReasonRateLimited: the eviction waits for a token of Options.RateLimit, or of the
	// TaintRateLimits of a taint that makes it due.
	ReasonRateLimited = engine.ReasonRateLimited
	// ReasonPaused: the eviction waits because Options.Brake or Options.Pauser holds it.
	ReasonPaused = engine.ReasonPaused
	// ReasonInFlight: the eviction waits for a pod in flight to be gone (Options.InFlight).
	ReasonInFlight = engine.ReasonInFlight
	// ReasonNamespaceLimit: the eviction waits for its namespace's window
	// (Options.NamespaceLimit).
	ReasonNamespaceLimit = engine.ReasonNamespaceLimit
	// ReasonOwnerLimit: the eviction waits for its workload's window (Options.OwnerLimit).
	ReasonOwnerLimit = engine.ReasonOwnerLimit
	// ReasonRecreated: the pod re-created a workload's pod evicted a moment ago, and waits
	// its backoff (Options.LoopDamping).
	ReasonRecreated = engine.ReasonRecreated
	// ReasonUnconfirmed: the taint would evict too many pods at once, and waits for an
	// operator's [ConfirmAnnotation] (Options.Confirm).
	ReasonUnconfirmed = engine.ReasonUnconfirmed
)
