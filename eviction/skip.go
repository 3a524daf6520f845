package eviction

import (
	v1 "k8s.io/api/core/v1"
)

// LeavingReason returns why the pod's own state says it must not be evicted, or "": it is
// being deleted (ReasonPodTerminating), or it has finished (ReasonPodFinished). It reads
// only the pod, so it is safe for concurrent use; a Source of pods on other holders (the
// device side) uses it for engine.Target.Leaving. [Manager.PodUpdated]'s change filter
// compares it between the old and the new pod, so a reason added here is never filtered
// out.
func LeavingReason(pod *v1.Pod) Reason {
	switch {
	case pod.DeletionTimestamp != nil:
		return ReasonPodTerminating
	case pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed:
		return ReasonPodFinished
	}
	return ""
}
