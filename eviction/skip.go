package eviction

import (
	"time"

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

// GoneBy returns when the pod, being deleted, is to be gone at the latest: its
// deletionTimestamp, which the API server sets to the end of its grace period; the zero
// time for a pod not being deleted. A Source of pods gives it as engine.Target.GoneBy.
func GoneBy(pod *v1.Pod) time.Time {
	if pod.DeletionTimestamp == nil {
		return time.Time{}
	}
	return pod.DeletionTimestamp.Time
}
