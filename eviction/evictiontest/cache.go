package evictiontest

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction"
)

// Cache is an in-memory [eviction.Cache], indexed by node. It stores the pointers it is
// given and returns them: do not change an object after storing it, as with informer
// caches. The zero value is an empty cache ready to use.
type Cache struct{ s store[*v1.Node, *v1.Pod] }

var _ eviction.Cache = (*Cache)(nil)

// SetPod stores pod, replacing the pod of the same namespace and name.
func (c *Cache) SetPod(pod *v1.Pod) {
	var nodes []string
	if pod.Spec.NodeName != "" {
		nodes = []string{pod.Spec.NodeName}
	}
	c.s.setTarget(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, pod, nodes)
}

// DeletePod removes the pod of that namespace and name and returns it, or nil.
func (c *Cache) DeletePod(namespace, name string) *v1.Pod {
	pod, _ := c.s.deleteTarget(types.NamespacedName{Namespace: namespace, Name: name})
	return pod
}

// SetNode stores node, replacing the node of the same name.
func (c *Cache) SetNode(node *v1.Node) { c.s.setHolder(node.Name, node) }

// DeleteNode removes the node of that name and returns it, or nil.
func (c *Cache) DeleteNode(name string) *v1.Node {
	node, _ := c.s.deleteHolder(name)
	return node
}

// SetError makes every lookup fail with err until it is called with nil.
func (c *Cache) SetError(err error) { c.s.setError(err) }

// PodsOnNode returns the pods bound to node, in no particular order.
func (c *Cache) PodsOnNode(node string) ([]*v1.Pod, error) { return c.s.targetsOn(node) }

// Pod returns the pod, or nil and a nil error when there is none.
func (c *Cache) Pod(namespace, name string) (*v1.Pod, error) {
	pod, _, err := c.s.target(types.NamespacedName{Namespace: namespace, Name: name})
	return pod, err
}

// Node returns the node, or nil and a nil error when there is none.
func (c *Cache) Node(name string) (*v1.Node, error) {
	node, _, err := c.s.holder(name)
	return node, err
}
