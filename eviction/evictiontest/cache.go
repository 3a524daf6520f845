package evictiontest

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction"
)

// Cache is an in-memory [eviction.Cache], indexed by node like an informer with a
// spec.nodeName index. It stores the pointers it is given and returns them: callers must
// not change an object after storing it (store a changed copy instead), as with informer
// caches. The zero value is an empty cache ready to use.
type Cache struct {
	mu     sync.RWMutex
	pods   map[types.NamespacedName]*v1.Pod
	byNode map[string]map[types.NamespacedName]*v1.Pod
	nodes  map[string]*v1.Node
	err    error
}

var _ eviction.Cache = (*Cache)(nil)

// SetPod stores pod, replacing the pod of the same namespace and name.
func (c *Cache) SetPod(pod *v1.Pod) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pods == nil {
		c.pods = make(map[types.NamespacedName]*v1.Pod)
		c.byNode = make(map[string]map[types.NamespacedName]*v1.Pod)
	}
	if old, ok := c.pods[key]; ok {
		c.unindex(key, old)
	}
	c.pods[key] = pod
	if pod.Spec.NodeName != "" {
		m := c.byNode[pod.Spec.NodeName]
		if m == nil {
			m = make(map[types.NamespacedName]*v1.Pod)
			c.byNode[pod.Spec.NodeName] = m
		}
		m[key] = pod
	}
}

// DeletePod removes the pod of that namespace and name and returns it, or nil.
func (c *Cache) DeletePod(namespace, name string) *v1.Pod {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.pods[key]
	if !ok {
		return nil
	}
	delete(c.pods, key)
	c.unindex(key, old)
	return old
}

func (c *Cache) unindex(key types.NamespacedName, pod *v1.Pod) {
	if m := c.byNode[pod.Spec.NodeName]; m != nil {
		delete(m, key)
		if len(m) == 0 {
			delete(c.byNode, pod.Spec.NodeName)
		}
	}
}

// SetNode stores node, replacing the node of the same name.
func (c *Cache) SetNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes == nil {
		c.nodes = make(map[string]*v1.Node)
	}
	c.nodes[node.Name] = node
}

// DeleteNode removes the node of that name and returns it, or nil.
func (c *Cache) DeleteNode(name string) *v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.nodes[name]
	delete(c.nodes, name)
	return old
}

// SetError makes every lookup fail with err until it is called with nil.
func (c *Cache) SetError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

// PodsOnNode returns the pods bound to node, in no particular order.
func (c *Cache) PodsOnNode(node string) ([]*v1.Pod, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.err != nil {
		return nil, c.err
	}
	m := c.byNode[node]
	out := make([]*v1.Pod, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	return out, nil
}

// Pod returns the pod, or nil and a nil error when there is none.
func (c *Cache) Pod(namespace, name string) (*v1.Pod, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.err != nil {
		return nil, c.err
	}
	return c.pods[types.NamespacedName{Namespace: namespace, Name: name}], nil
}

// Node returns the node, or nil and a nil error when there is none.
func (c *Cache) Node(name string) (*v1.Node, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.err != nil {
		return nil, c.err
	}
	return c.nodes[name], nil
}
