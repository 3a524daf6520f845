package eviction

// Reason says why an eviction was cancelled or skipped.
type Reason string

// Reasons given to [Observer.Cancelled] and [Observer.Skipped].
const (
	// ReasonNotTainted: the pod's node has no NoExecute taint (any more), or is not known.
	ReasonNotTainted Reason = "NodeNotTainted"
	// ReasonTolerated: the pod tolerates every NoExecute taint of its node forever.
	ReasonTolerated Reason = "Tolerated"
	// ReasonNodeDeleted: the pod's node was deleted.
	ReasonNodeDeleted Reason = "NodeDeleted"
	// ReasonPodDeleted: the pod was deleted.
	ReasonPodDeleted Reason = "PodDeleted"
	// ReasonPodUnbound: the pod is no longer bound to a node.
	ReasonPodUnbound Reason = "PodUnbound"
	// ReasonPodMoved: the pod is bound to another node than the one it was due on.
	ReasonPodMoved Reason = "PodMoved"
	// ReasonPodReplaced: a pod of the same name but another UID stands in the cache.
	ReasonPodReplaced Reason = "PodReplaced"
	// ReasonPodFinished: the pod has succeeded or failed; its containers no longer run.
	ReasonPodFinished Reason = "PodFinished"
	// ReasonPodTerminating: the pod is already being deleted.
	ReasonPodTerminating Reason = "PodTerminating"
	// ReasonNotDue: right before deleting, the recheck found the pod no longer due, or due
	// later (then it is scheduled again).
	ReasonNotDue Reason = "NotDue"
)
