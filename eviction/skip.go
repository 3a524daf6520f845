package eviction

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// skipReason decides whether a pod that is due, or would be scheduled, must be left alone,
// and why: the pod is leaving on its own ([leavingReason]), or the Manager has deleted it
// already and the Cache has not caught up. Both the processing of an update and the recheck
// before a delete ask it, and nothing else decides a skip.
func (m *Manager) skipReason(key types.NamespacedName, pod *v1.Pod) (Reason, bool) {
	if reason := leavingReason(pod); reason != "" {
		return reason, true
	}
	if m.deleted.has(key, pod.UID) {
		return ReasonPodTerminating, true
	}
	return "", false
}

// leavingReason returns why the pod's own state says it must not be evicted, or "": it is
// being deleted, or it has finished. It reads only the pod, and [Manager.PodUpdated]'s change filter
// compares it between the old and the new pod, so a reason added here is never filtered
// out.
func leavingReason(pod *v1.Pod) Reason {
	switch {
	case pod.DeletionTimestamp != nil:
		return ReasonPodTerminating
	case pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed:
		return ReasonPodFinished
	}
	return ""
}
