package eviction

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction/engine"
)

// PodOwner returns the workload pod belongs to, for the budgets per owner
// (Options.OwnerLimit, Options.LoopDamping): its controller owner reference; for a
// ReplicaSet of apps whose pod carries the pod-template-hash label, the Deployment that
// made it, whose name is the ReplicaSet's less "-" and that hash, as the Deployment
// controller names them, so that the pods of every ReplicaSet of a rollout count as one
// owner, without a lookup. A pod without a controller has the zero Owner. It allocates
// nothing.
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
