package clientgo

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// wrapHandlers registers in f pod and node informers that pass every event handler added to
// them through pods and nodes (nil: as it is), and returns f: what a test puts between the
// informers and a Controller's handlers, with no hook in the Controller. Call it before
// anything asks f for those informers.
func wrapHandlers(f informers.SharedInformerFactory, pods, nodes func(cache.ResourceEventHandler) cache.ResourceEventHandler) informers.SharedInformerFactory {
	f.InformerFor(&v1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return wrappedInformer{corev1informers.NewPodInformer(c, metav1.NamespaceAll, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}), pods}
	})
	f.InformerFor(&v1.Node{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return wrappedInformer{corev1informers.NewNodeInformer(c, resync, cache.Indexers{}), nodes}
	})
	return f
}

type wrappedInformer struct {
	cache.SharedIndexInformer
	wrap func(cache.ResourceEventHandler) cache.ResourceEventHandler
}

func (i wrappedInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if i.wrap != nil {
		h = i.wrap(h)
	}
	return i.SharedIndexInformer.AddEventHandlerWithOptions(h, o)
}

// beforeHandler is a ResourceEventHandler that calls before, then h, for every event.
type beforeHandler struct {
	h      cache.ResourceEventHandler
	before func()
}

func (b beforeHandler) OnAdd(obj any, initial bool) { b.before(); b.h.OnAdd(obj, initial) }
func (b beforeHandler) OnUpdate(old, new any)       { b.before(); b.h.OnUpdate(old, new) }
func (b beforeHandler) OnDelete(obj any)            { b.before(); b.h.OnDelete(obj) }
