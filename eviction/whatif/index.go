package whatif

import (
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
	for _, p := range pods {
		if p == nil {
			continue
		}
		k := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		if old, ok := x.byKey[k]; ok {
			x.drop(old)
		}
		x.byKey[k] = p
		if p.Spec.NodeName != "" {
			x.byNode[p.Spec.NodeName] = append(x.byNode[p.Spec.NodeName], p)
		}
	}
	return x
}

// drop takes old out of its node's list.
func (x *Index) drop(old *v1.Pod) {
	list := x.byNode[old.Spec.NodeName]
	for i, p := range list {
		if p == old {
			x.byNode[old.Spec.NodeName] = append(list[:i:i], list[i+1:]...)
			return
		}
	}
}

// PodsOnNode returns the pods bound to node, in the order of the list. The slice is the
// Index's own: do not change it.
func (x *Index) PodsOnNode(node string) ([]*v1.Pod, error) { return x.byNode[node], nil }

// Pod returns the pod, or nil.
func (x *Index) Pod(namespace, name string) (*v1.Pod, error) {
	return x.byKey[types.NamespacedName{Namespace: namespace, Name: name}], nil
}
