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
// periodic resync (the Manager keeps its own schedule, and a resync would only make it look
// at every pod again), and managedFields dropped from the cached objects, which no one here
// reads and which can be a large part of a pod's size. Any factory works with
// [NewInformers]; this one only saves memory and work.
func NewFactory(client kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(dropManagedFields))
}

// dropManagedFields clears managedFields on a copy: a watch may hand the informer an object
// that someone else still holds (the fake clientset hands over the very object it stores),
// and changing that in place is a data race.
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

// NodeNameIndex is the name of the pod informer's index on spec.nodeName. The Manager asks
// for the pods of a node each time the node's NoExecute taints change; without the index
// that is a scan of every pod in the cluster, with it a map lookup.
const NodeNameIndex = "spec.nodeName"

// podsByNodeName is the index function of [NodeNameIndex]. Pods not bound to a node are not
// indexed: the Manager never asks for them.
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

// Informers are the two shared informers the controller reads: pods, with the spec.nodeName
// index, and nodes. They come from a SharedInformerFactory, so that a program that already
// has one shares its watches and caches with the controller instead of opening its own.
// The informers are safe for concurrent use; the zero Informers holds none: create one with
// [NewInformers].
type Informers struct {
	Pods  cache.SharedIndexInformer
	Nodes cache.SharedIndexInformer
}

// NewInformers registers the pod and node informers in factory, if they are not already,
// and adds the spec.nodeName index to the pod informer if it has none. Call it before
// factory.Start, which starts the informers registered by then, or call Start again after
// it. The index may be added to a pod informer that runs already (client-go indexes the pods
// it holds as it adds the index), but not to one that has stopped: NewInformers then
// fails. Calling it twice on one factory returns the same informers and adds the index
// once.
func NewInformers(factory informers.SharedInformerFactory) (Informers, error) {
	inf := Informers{
		Pods:  factory.Core().V1().Pods().Informer(),
		Nodes: factory.Core().V1().Nodes().Informer(),
	}
	if _, ok := inf.Pods.GetIndexer().GetIndexers()[NodeNameIndex]; ok {
		return inf, nil
	}
	if err := inf.Pods.AddIndexers(cache.Indexers{NodeNameIndex: podsByNodeName}); err != nil {
		return Informers{}, fmt.Errorf("clientgo: adding the %s index to the pod informer: %w", NodeNameIndex, err)
	}
	return inf, nil
}

// Updater is what the event handlers feed: [github.com/taintevict/taintevict/eviction.Manager]
// implements it. It is an interface here only so that the handlers can be tested alone.
type Updater interface {
	NodeUpdated(old, new *v1.Node)
	PodUpdated(old, new *v1.Pod)
}

// AddHandlers connects the informers to m. The informers call their handlers after they
// have updated their caches, so that when the Manager reads the Cache while processing an
// update, it sees that update or a newer one: the order the Manager relies on. Delete
// events whose object the informer only knows from a relist (a
// [cache.DeletedFinalStateUnknown] tombstone) are unwrapped; objects of another type are
// logged to logger and ignored. It may be called before or after the informers start: an
// informer that runs already replays its cache to a new handler as adds.
func (inf Informers) AddHandlers(m Updater, logger klog.Logger) error {
	_, err := inf.addHandlers(m, logger)
	return err
}

// addHandlers is AddHandlers, and returns what is done once each handler has been handed
// its informer's initial listing.
func (inf Informers) addHandlers(m Updater, logger klog.Logger) ([]cache.DoneChecker, error) {
	opts := cache.HandlerOptions{Logger: &logger}
	nodes, err := inf.Nodes.AddEventHandlerWithOptions(nodeHandler(m, logger), opts)
	if err != nil {
		return nil, fmt.Errorf("clientgo: adding the node event handler: %w", err)
	}
	pods, err := inf.Pods.AddEventHandlerWithOptions(podHandler(m, logger), opts)
	if err != nil {
		return nil, fmt.Errorf("clientgo: adding the pod event handler: %w", err)
	}
	return []cache.DoneChecker{nodes.HasSyncedChecker(), pods.HasSyncedChecker()}, nil
}

// nodeHandler turns the node informer's callbacks into Manager.NodeUpdated calls with kube's
// (old, new) convention: old nil for an add, new nil for a delete.
func nodeHandler(m Updater, logger klog.Logger) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if node, ok := obj.(*v1.Node); ok {
				m.NodeUpdated(nil, node)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*v1.Node)
			node, ok2 := newObj.(*v1.Node)
			if ok1 && ok2 {
				m.NodeUpdated(old, node)
			}
		},
		DeleteFunc: func(obj any) {
			node, ok := unwrapDeleted[*v1.Node](obj)
			if !ok {
				logger.Info("Ignoring a node delete event of an unexpected type", "type", fmt.Sprintf("%T", obj))
				return
			}
			m.NodeUpdated(node, nil)
		},
	}
}

// podHandler turns the pod informer's callbacks into Manager.PodUpdated calls, as
// nodeHandler does for nodes. It passes every update: the Manager itself ignores those that
// cannot change an eviction (status changes, say), more cheaply than a filter here could.
func podHandler(m Updater, logger klog.Logger) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*v1.Pod); ok {
				m.PodUpdated(nil, pod)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*v1.Pod)
			pod, ok2 := newObj.(*v1.Pod)
			if ok1 && ok2 {
				m.PodUpdated(old, pod)
			}
		},
		DeleteFunc: func(obj any) {
			pod, ok := unwrapDeleted[*v1.Pod](obj)
			if !ok {
				logger.Info("Ignoring a pod delete event of an unexpected type", "type", fmt.Sprintf("%T", obj))
				return
			}
			m.PodUpdated(pod, nil)
		},
	}
}

// unwrapDeleted returns the object of a delete event. When the informer's watch missed the
// delete and only a relist noticed it, the informer passes a cache.DeletedFinalStateUnknown
// holding the last state it knew instead of the object itself; that state is as good as any
// for the Manager, which only needs the name (and, for a pod, its node) to cancel.
func unwrapDeleted[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, ok := obj.(T)
	return t, ok
}
