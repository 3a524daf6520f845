package eviction

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
)

// LeavingReason returns why the pod's own state says it must not be evicted, or "": it is
// being deleted ([ReasonPodTerminating]), or it has finished ([ReasonPodFinished]). It,
// [GoneBy] and [PodOwner] read only the pod, so they are safe for concurrent use; a Source
// of pods on other holders (the device side) uses them too.
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
// time for a pod not being deleted.
func GoneBy(pod *v1.Pod) time.Time {
	if pod.DeletionTimestamp == nil {
		return time.Time{}
	}
	return pod.DeletionTimestamp.Time
}

// PodOwner returns the workload pod belongs to, for Options.OwnerLimit and LoopDamping: its
// controller owner reference, or the zero Owner without one. A ReplicaSet of apps whose
// name is the pod's pod-template-hash label after "-" gives the Deployment named by the
// rest, so that every ReplicaSet of a rollout counts as one owner. It allocates nothing.
func PodOwner(pod *v1.Pod) engine.Owner {
	for i := range pod.OwnerReferences {
		ref := &pod.OwnerReferences[i]
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		if ref.Kind == "ReplicaSet" && strings.HasPrefix(ref.APIVersion, "apps/") {
			hash := pod.Labels["pod-template-hash"]
			if n := len(ref.Name) - len(hash) - 1; hash != "" && n > 0 && ref.Name[n] == '-' && ref.Name[n+1:] == hash {
				return engine.Owner{Kind: "Deployment", Name: ref.Name[:n]}
			}
		}
		return engine.Owner{Kind: ref.Kind, Name: ref.Name}
	}
	return engine.Owner{}
}

func podKey(pod *v1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
}
