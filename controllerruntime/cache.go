package controllerruntime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
)

// cacheReader is the [eviction.Cache] over the manager's cache: the Manager reads the
// cluster from the informers that feed it updates, so that what it reads is never older
// than the update it processes, and costs no API call. PodsOnNode lists through the field
// index on spec.nodeName (see [informers]). A pod or node that is not there is the cache's
// NotFound error, which the Manager takes as "does not exist".
//
// The reads do not deep-copy (client.UnsafeDisableDeepCopy): a Get copies the cached
// object's top-level struct into a new one, whose maps and slices are the cache's. The
// Manager and the Deleters only read them, as the eviction.Cache contract has it. Safe for
// concurrent use; never blocks (see noWait).
type cacheReader struct{ r client.Reader }

var (
	_ eviction.Cache     = cacheReader{}
	_ clientgo.PodGetter = cacheReader{}
)

func newCache(r client.Reader) cacheReader { return cacheReader{r} }

// noWait is the context of every read: done already. controller-runtime's cache makes a
// read of an informer that has not synced wait for it on the read's context; on this one
// such a read fails at once instead, an error that the Manager retries later. The
// Controller hands the Manager nothing before the informers have synced, so no read meets
// one; none can hang a worker of the Manager either.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// PodsOnNode returns the pods whose spec.nodeName is node, from the field index.
func (c cacheReader) PodsOnNode(node string) ([]*v1.Pod, error) {
	var list v1.PodList
	err := c.r.List(noWait, &list, client.MatchingFields{clientgo.NodeNameIndex: node}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, fmt.Errorf("controllerruntime: pods on node %s: %w", node, err)
	}
	pods := make([]*v1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods, nil
}

// Pod returns the pod from the cache, or the cache's NotFound error.
func (c cacheReader) Pod(namespace, name string) (*v1.Pod, error) {
	pod := new(v1.Pod)
	if err := c.r.Get(noWait, client.ObjectKey{Namespace: namespace, Name: name}, pod, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return pod, nil
}

// Node returns the node from the cache, or the cache's NotFound error.
func (c cacheReader) Node(name string) (*v1.Node, error) {
	node := new(v1.Node)
	if err := c.r.Get(noWait, client.ObjectKey{Name: name}, node, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return node, nil
}

// informers adds the spec.nodeName field index to the pods of the manager's cache and
// returns its pod and node informers, registering them if they are not already.
func informers(ctx context.Context, c crcache.Cache, idx client.FieldIndexer) (pods, nodes crcache.Informer, err error) {
	if err := idx.IndexField(ctx, &v1.Pod{}, clientgo.NodeNameIndex, nodeNameOf); err != nil {
		return nil, nil, fmt.Errorf("controllerruntime: indexing pods by %s: %w", clientgo.NodeNameIndex, err)
	}
	if pods, err = c.GetInformer(ctx, &v1.Pod{}); err != nil {
		return nil, nil, fmt.Errorf("controllerruntime: the pod informer: %w", err)
	}
	if nodes, err = c.GetInformer(ctx, &v1.Node{}); err != nil {
		return nil, nil, fmt.Errorf("controllerruntime: the node informer: %w", err)
	}
	return pods, nodes, nil
}

// nodeNameOf is the index function of spec.nodeName: a pod bound to a node, under the
// node's name. Pods not bound to one are not indexed: the Manager never asks for them.
func nodeNameOf(obj client.Object) []string {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return nil
	}
	return []string{pod.Spec.NodeName}
}
