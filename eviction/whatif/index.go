package whatif

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Index is a read-only index of a list of pods, by namespace and name and by node: the
// [Pods] of a what-if made from a list (a kubectl plugin's), where a controller has its
// informers' cache. It keeps the pods it is given and never changes them. It is safe for
// concurrent use once made; the zero Index is empty.
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

// Len returns the number of pods indexed.
func (x *Index) Len() int { return len(x.byKey) }
