package clientgo

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/taintevict/taintevict/eviction"
)

// InformerCache is the [eviction.Cache] over the informers' stores: the Manager reads the
// cluster from the same caches that feed it updates, so that what it reads is never older
// than the update it is processing, and costs no API call.
//
// Pod and Node go through the listers, which return a NotFound API error for an object that
// is not there; the Manager takes that as "does not exist", as it does a nil object.
// PodsOnNode reads the spec.nodeName index (see [NodeNameIndex]).
//
// The objects returned are the informers' own: shared, and never to be modified. The
// Manager only reads them. All methods are safe for concurrent use and never block on the
// API server. The zero InformerCache is not usable: create one with [NewInformerCache].
type InformerCache struct {
	podIndex cache.Indexer
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
}

var _ eviction.Cache = InformerCache{}

// NewInformerCache returns the Cache over inf. The pod informer must have the
// [NodeNameIndex] index, as [NewInformers] gives it.
func NewInformerCache(inf Informers) InformerCache {
	return InformerCache{
		podIndex: inf.Pods.GetIndexer(),
		pods:     corelisters.NewPodLister(inf.Pods.GetIndexer()),
		nodes:    corelisters.NewNodeLister(inf.Nodes.GetIndexer()),
	}
}

// PodsOnNode returns the pods whose spec.nodeName is node, from the index. It fails when
// the pod informer has no [NodeNameIndex].
func (c InformerCache) PodsOnNode(node string) ([]*v1.Pod, error) {
	objs, err := c.podIndex.ByIndex(NodeNameIndex, node)
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

// Pod returns the pod from the pod lister, or its NotFound error.
func (c InformerCache) Pod(namespace, name string) (*v1.Pod, error) {
	return c.pods.Pods(namespace).Get(name)
}

// Node returns the node from the node lister, or its NotFound error.
func (c InformerCache) Node(name string) (*v1.Node, error) {
	return c.nodes.Get(name)
}
