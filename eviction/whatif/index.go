package whatif

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Index is the [Pods] of a list of pods (a kubectl plugin's), by key and by node. It keeps
// the pods and never changes them; it is safe for concurrent use; the zero Index is empty.
type Index struct {
	byKey  map[types.NamespacedName]*v1.Pod
	byNode map[string][]*v1.Pod
}

var _ Pods = (*Index)(nil)

// NewIndex indexes pods; nil entries are left out, and of two pods with the same namespace
// and name the last counts.
func NewIndex(pods []*v1.Pod) *Index {
	x := &Index{byKey: make(map[types.NamespacedName]*v1.Pod, len(pods)), byNode: map[string][]*v1.Pod{}}
	for i := len(pods) - 1; i >= 0; i-- { // from the end: the last of a key counts
		p := pods[i]
		if p == nil {
			continue
		}
		k := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		if _, later := x.byKey[k]; later {
			continue
		}
		x.byKey[k] = p
		if p.Spec.NodeName != "" {
			x.byNode[p.Spec.NodeName] = append(x.byNode[p.Spec.NodeName], p)
		}
	}
	for _, list := range x.byNode {
		slices.Reverse(list)
	}
	return x
}

// PodsOnNode returns the pods bound to node, in the order of the list. The slice is the
// Index's own: do not change it.
func (x *Index) PodsOnNode(node string) ([]*v1.Pod, error) { return x.byNode[node], nil }

// Pod returns the pod, or nil.
func (x *Index) Pod(namespace, name string) (*v1.Pod, error) {
	return x.byKey[types.NamespacedName{Namespace: namespace, Name: name}], nil
}
