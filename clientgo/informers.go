package clientgo

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// NewFactory returns a SharedInformerFactory suited to a taint eviction controller: no
// periodic resync, and cached objects trimmed ([Trim]). Any factory works with
// [NewInformers]; this one saves memory and work.
func NewFactory(client kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(Trim))
}

// Trim is the transform of [NewFactory]: it drops managedFields from every object; of a
// pod, its containers (init and ephemeral too), volumes, affinity, topology spread
// constraints and container statuses; of a node, its images. It changes a copy, never the
// object it is given; objects with nothing to drop pass as they are.
func Trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.Pod:
		if len(o.ManagedFields)+len(o.Spec.Containers)+len(o.Spec.InitContainers)+len(o.Spec.EphemeralContainers)+
			len(o.Spec.Volumes)+len(o.Status.ContainerStatuses)+len(o.Status.InitContainerStatuses)+
			len(o.Status.EphemeralContainerStatuses)+len(o.Spec.TopologySpreadConstraints) == 0 && o.Spec.Affinity == nil {
			return obj, nil
		}
		p := *o // shallow: only the fields dropped are set
		p.ManagedFields = nil
		p.Spec.Containers, p.Spec.InitContainers, p.Spec.EphemeralContainers, p.Spec.Volumes = nil, nil, nil, nil
		p.Spec.Affinity, p.Spec.TopologySpreadConstraints = nil, nil
		p.Status.ContainerStatuses, p.Status.InitContainerStatuses, p.Status.EphemeralContainerStatuses = nil, nil, nil
		return &p, nil
	case *v1.Node:
		if len(o.ManagedFields)+len(o.Status.Images) == 0 {
			return obj, nil
		}
		n := *o
		n.ManagedFields, n.Status.Images = nil, nil
		return &n, nil
	}
	return dropManagedFields(obj)
}

// dropManagedFields clears managedFields on a copy: a watch may hand the informer an object
// that someone else still holds (the fake clientset does).
func dropManagedFields(obj any) (any, error) {
	m, err := meta.Accessor(obj)
	if err != nil || len(m.GetManagedFields()) == 0 {
		return obj, nil
	}
	if o, ok := obj.(runtime.Object); ok {
		obj = o.DeepCopyObject()
		m, _ = meta.Accessor(obj)
	}
	m.SetManagedFields(nil)
	return obj, nil
}

// NodeNameIndex is the name of the pod informer's index on spec.nodeName.
const NodeNameIndex = "spec.nodeName"

// podsByNodeName is the index function of [NodeNameIndex]; unbound pods are not indexed.
func podsByNodeName(obj any) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("clientgo: spec.nodeName index: want *v1.Pod, got %T", obj)
	}
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{pod.Spec.NodeName}, nil
}

// Informers are the pod (with the spec.nodeName index) and node informers of a
// SharedInformerFactory. The zero Informers holds none: create one with [NewInformers].
type Informers struct {
	Pods  cache.SharedIndexInformer
	Nodes cache.SharedIndexInformer
}

// NewInformers registers the pod and node informers in factory, if they are not already,
// and adds the spec.nodeName index to the pod informer if it has none. Call it before
// factory.Start, or call Start again after it. It fails for a pod informer that has
// stopped. Calling it twice on one factory returns the same informers.
func NewInformers(factory informers.SharedInformerFactory) (Informers, error) {
	inf := Informers{
		Pods:  factory.Core().V1().Pods().Informer(),
		Nodes: factory.Core().V1().Nodes().Informer(),
	}
	if _, ok := inf.Pods.GetIndexer().GetIndexers()[NodeNameIndex]; !ok {
		if err := inf.Pods.AddIndexers(cache.Indexers{NodeNameIndex: podsByNodeName}); err != nil {
			return Informers{}, fmt.Errorf("clientgo: adding the %s index to the pod informer: %w", NodeNameIndex, err)
		}
	}
	return inf, nil
}

// Updater is what the event handlers feed: [eviction.Manager] implements it.
type Updater interface {
	NodeUpdated(old, new *v1.Node)
	PodUpdated(old, new *v1.Pod)
}

// AddHandlers connects the informers to m through [HandlerFuncs], which an informer calls
// once its cache has the update, so that the Manager reading the Cache sees that update or
// a newer one. It may be called before or after the informers start. The handlers pass
// every update: the Manager ignores the irrelevant ones more cheaply than a filter here.
//
// It returns what is done once each handler has been handed its informer's initial
// listing: wait for them (cache.WaitFor), not the informers' HasSynced, before calling
// Manager.Synced.
func (inf Informers) AddHandlers(m Updater, logger klog.Logger) ([]cache.DoneChecker, error) {
	opts := cache.HandlerOptions{Logger: &logger}
	nodes, err := inf.Nodes.AddEventHandlerWithOptions(HandlerFuncs(logger, m.NodeUpdated), opts)
	if err != nil {
		return nil, fmt.Errorf("clientgo: adding the node event handler: %w", err)
	}
	pods, err := inf.Pods.AddEventHandlerWithOptions(HandlerFuncs(logger, m.PodUpdated), opts)
	if err != nil {
		return nil, fmt.Errorf("clientgo: adding the pod event handler: %w", err)
	}
	return []cache.DoneChecker{nodes.HasSyncedChecker(), pods.HasSyncedChecker()}, nil
}
