package clientgo

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/taintevict/taintevict/eviction"
)

// InformerCache is the [eviction.Cache] over the informers' stores, the caches that feed
// the Manager its updates: what it reads is never older than the update it is processing.
// Pod and Node return the listers' NotFound error for an object that is not there;
// PodsOnNode reads [NodeNameIndex].
//
// The objects returned are the informers' own: shared, and never to be modified. All
// methods are safe for concurrent use and never block on the API server. The zero
// InformerCache is not usable: create one with [NewInformerCache].
type InformerCache struct {
	pods, nodes cache.Indexer // read by key: a lister's namespaced lookup allocates
	missingNil  bool          // an object not there is nil, with no error (managerCache)
}

var _ eviction.Cache = InformerCache{}

// NewInformerCache returns the Cache over inf. The pod informer must have the
// [NodeNameIndex] index, as [NewInformers] gives it.
func NewInformerCache(inf Informers) InformerCache {
	return InformerCache{pods: inf.Pods.GetIndexer(), nodes: inf.Nodes.GetIndexer()}
}

// managerCache is c as the Controller's Manager reads it: an object not in its store is
// nil, with no error, as [eviction.Cache] allows, which saves a NotFound's allocations.
func managerCache(c InformerCache) InformerCache {
	c.missingNil = true
	return c
}

// PodsOnNode returns the pods whose spec.nodeName is node, from the index. It fails when
// the pod informer has no [NodeNameIndex].
func (c InformerCache) PodsOnNode(node string) ([]*v1.Pod, error) {
	objs, err := c.pods.ByIndex(NodeNameIndex, node)
	if err != nil {
		return nil, fmt.Errorf("clientgo: pods on node %s: %w", node, err)
	}
	pods := make([]*v1.Pod, 0, len(objs))
	for _, obj := range objs {
		pod, ok := obj.(*v1.Pod)
		if !ok {
			return nil, fmt.Errorf("clientgo: the pod index holds a %T", obj)
		}
		pods = append(pods, pod)
	}
	return pods, nil
}

// Pod returns the pod from the pod store, or the NotFound error the pod lister returns.
func (c InformerCache) Pod(namespace, name string) (*v1.Pod, error) {
	return get[*v1.Pod](c, c.pods, podKey(namespace, name), name, podResource)
}

// Node returns the node from the node store, or the NotFound error the node lister
// returns.
func (c InformerCache) Node(name string) (*v1.Node, error) {
	return get[*v1.Node](c, c.nodes, name, name, nodeResource)
}

var (
	podResource  = v1.Resource("pod")
	nodeResource = v1.Resource("node")
)

// podKey is the pod store's key, as cache.MetaNamespaceKeyFunc makes it.
func podKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// get returns the object of store under key, as client-go's listers find it, except that an
// object of another type than T is an error, not a panic.
func get[T runtime.Object](c InformerCache, store cache.Indexer, key, name string, resource schema.GroupResource) (T, error) {
	var none T
	obj, exists, err := store.GetByKey(key)
	switch {
	case err != nil:
		return none, err
	case !exists && c.missingNil:
		return none, nil
	case !exists:
		return none, apierrors.NewNotFound(resource, name)
	}
	t, ok := obj.(T)
	if !ok {
		return none, fmt.Errorf("clientgo: the %s store holds a %T under %q", resource.Resource, obj, key)
	}
	return t, nil
}
