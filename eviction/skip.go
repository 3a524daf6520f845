package eviction

import (
	v1 "k8s.io/api/core/v1"
)

// leavingReason returns why the pod's own state says it must not be evicted, or "": it is
// being deleted, or it has finished. It reads only the pod, and [Manager.PodUpdated]'s
// change filter compares it between the old and the new pod, so a reason added here is never
// filtered out.
func leavingReason(pod *v1.Pod) Reason {
	switch {
	case pod.DeletionTimestamp != nil:
		return ReasonPodTerminating
	case pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed:
		return ReasonPodFinished
	}
	return ""
}
