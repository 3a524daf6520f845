package outage

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/taintevict/taintevict/eviction"
)

// newTaintevict makes the eviction Manager with its default options over the informers of
// factory.
func newTaintevict(_ context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Side, error) {
	pods := factory.Core().V1().Pods()
	if err := pods.Informer().AddIndexers(cache.Indexers{NodeNameIndex: podNodeName}); err != nil {
		return nil, fmt.Errorf("outage: adding the spec.nodeName index: %w", err)
	}
	c := listerCache{index: pods.Informer().GetIndexer(), pods: pods.Lister(), nodes: factory.Core().V1().Nodes().Lister()}
	m, err := eviction.New(twoCallDeleter{client}, c, eviction.Options{})
	if err != nil {
		return nil, err
	}
	return &Side{Updates: m, Run: m.Run, Idle: func() bool { return m.Backlog() == 0 }}, nil
}

type listerCache struct {
	index cache.Indexer
	pods  corelisters.PodLister
	nodes corelisters.NodeLister
}

func (c listerCache) PodsOnNode(node string) ([]*v1.Pod, error) {
	objs, err := c.index.ByIndex(NodeNameIndex, node)
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*v1.Pod))
	}
	return out, nil
}

func (c listerCache) Pod(ns, name string) (*v1.Pod, error) { return c.pods.Pods(ns).Get(name) }
func (c listerCache) Node(name string) (*v1.Node, error)   { return c.nodes.Get(name) }

type twoCallDeleter struct{ c kubernetes.Interface }

func (d twoCallDeleter) Delete(ctx context.Context, ref eviction.PodRef) error {
	patch := fmt.Sprintf(`{"metadata":{"uid":%q},"status":{"conditions":[{"type":"DisruptionTarget","status":"True","reason":"DeletionByTaintManager","message":"Taint manager: deleting due to NoExecute taint"}]}}`, ref.UID)
	pods := d.c.CoreV1().Pods(ref.Namespace)
	if _, err := pods.Patch(ctx, ref.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		return gone(err)
	}
	uid := ref.UID
	return gone(pods.Delete(ctx, ref.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
}

func gone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return errors.Join(eviction.ErrPodGone, err)
	}
	return err
}
