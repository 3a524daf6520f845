package eviction

import "github.com/taintevict/taintevict/eviction/engine"

// Reason says why an eviction was cancelled or skipped, or why a due one waits. It is the
// engine's: the Manager reports the engine's reasons under the names below.
type Reason = engine.Reason

// Reasons given to [Observer.Cancelled] and [Observer.Skipped].
const (
	// ReasonNotTainted: the pod's node has no NoExecute taint (any more), or is not known.
	ReasonNotTainted Reason = "NodeNotTainted"
	// ReasonTolerated: the pod tolerates every NoExecute taint of its node forever.
	ReasonTolerated = engine.ReasonTolerated
	// ReasonNodeDeleted: the pod's node was deleted.
	ReasonNodeDeleted Reason = "NodeDeleted"
	// ReasonPodDeleted: the pod was deleted.
	ReasonPodDeleted Reason = "PodDeleted"
	// ReasonPodUnbound: the pod is no longer bound to a node.
	ReasonPodUnbound Reason = "PodUnbound"
	// ReasonPodMoved: the pod is bound to another node than the one it was due on.
	//
	// Deprecated: no longer reported. A pod cannot change nodes under the same UID; a
	// recheck that finds another node decides again, as an update would, and reports a move
	// (Scheduled) or a cancellation.
	ReasonPodMoved Reason = "PodMoved"
	// ReasonPodReplaced: a pod of the same name but another UID stands in the cache.
	ReasonPodReplaced Reason = "PodReplaced"
	// ReasonPodFinished: the pod has succeeded or failed; its containers no longer run.
	// Reported (Skipped) only for a pod whose eviction was open.
	ReasonPodFinished Reason = "PodFinished"
	// ReasonPodTerminating: the pod is already being deleted. Reported (Skipped) only for a
	// pod whose eviction was open.
	ReasonPodTerminating Reason = "PodTerminating"
	// ReasonNotDue: right before deleting, the recheck found the pod no longer due.
	//
	// Deprecated: no longer reported. The recheck decides as an update does: a pod due later
	// is moved (Scheduled with the later time), one no longer due is Cancelled with the
	// reason an update would give.
	ReasonNotDue Reason = "NotDue"
)

// Reasons given to [Observer.Delayed]: why an eviction that is due waits.
const (
	// ReasonRateLimited: the eviction waits for a token of Options.RateLimit, or of the
	// TaintRateLimits of a taint that makes it due.
	ReasonRateLimited = engine.ReasonRateLimited
	// ReasonPaused: the eviction waits because Options.Brake paused the evictions caused by
	// a taint that makes it due.
	ReasonPaused = engine.ReasonPaused
)

// podReason returns the name the Manager gives the engine's reason r.
func podReason(r engine.Reason) Reason {
	switch r {
	case engine.ReasonNotTainted:
		return ReasonNotTainted
	case engine.ReasonHolderDeleted:
		return ReasonNodeDeleted
	case engine.ReasonTargetDeleted:
		return ReasonPodDeleted
	case engine.ReasonUnbound:
		return ReasonPodUnbound
	case engine.ReasonReplaced:
		return ReasonPodReplaced
	}
	return r
}
