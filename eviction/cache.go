package eviction

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
)

// Cache is the caller's view of the cluster, usually informer listers. The [Manager] reads
// it, never writes it, and never changes the objects it returns. Its methods are called
// from several goroutines at once.
//
// A lookup of something that does not exist returns a nil object and a nil error, or an
// error for which k8s.io/apimachinery/pkg/api/errors.IsNotFound is true. Any other error
// is taken as passing: the work that needed the lookup is retried later.
type Cache interface {
	// PodsOnNode returns the pods bound to the node (spec.nodeName == node).
	PodsOnNode(node string) ([]*v1.Pod, error)
	// Pod returns the pod, read when an update of it is processed and right before a delete.
	Pod(namespace, name string) (*v1.Pod, error)
	// Node returns the node, read right before a delete.
	Node(name string) (*v1.Node, error)
}

// podSource is the engine's view of pods bound to nodes, read from a Cache.
type podSource struct{ c Cache }

var _ engine.Source[*v1.Pod] = podSource{}

func (s podSource) Target(key types.NamespacedName) (*v1.Pod, bool, error) {
	pod, err := s.c.Pod(key.Namespace, key.Name)
	if err != nil {
		return nil, false, ignoreNotFound(err)
	}
	return pod, pod != nil, nil
}

// TargetsOn leaves out nil pods and pods bound to another node, which a Cache that lags
// behind may list; it copies the list only when it has such a pod.
func (s podSource) TargetsOn(node string) ([]*v1.Pod, error) {
	pods, err := s.c.PodsOnNode(node)
	if err != nil {
		return nil, err
	}
	stray := func(p *v1.Pod) bool { return p == nil || p.Spec.NodeName != node }
	if slices.ContainsFunc(pods, stray) {
		pods = slices.DeleteFunc(slices.Clone(pods), stray)
	}
	return pods, nil
}

func (s podSource) Holder(name string) (engine.Holder, bool, error) {
	node, err := s.c.Node(name)
	if err != nil || node == nil {
		return engine.Holder{}, false, ignoreNotFound(err)
	}
	return nodeHolder(node), true, nil
}

// ignoreNotFound returns nil for a NotFound error: what does not exist.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (podSource) Locate(pod *v1.Pod) (types.NamespacedName, string) {
	return podKey(pod), pod.Spec.NodeName
}

func (podSource) Describe(pod *v1.Pod, d *engine.Target) {
	d.Key, d.UID, d.Leaving, d.GoneBy = podKey(pod), pod.UID, LeavingReason(pod), GoneBy(pod)
	d.Owner, d.Created = PodOwner(pod), pod.CreationTimestamp.Time
	d.Bindings = d.Bindings[:0]
	if pod.Spec.NodeName != "" {
		d.Bindings = append(d.Bindings, engine.Binding{Holder: pod.Spec.NodeName, Tolerations: pod.Spec.Tolerations})
	}
}

// nodeHolder returns node as a holder, its zone its group (for [Brake.ZoneFraction]);
// nodes without a zone label form one group, as in the node lifecycle controller.
func nodeHolder(node *v1.Node) engine.Holder {
	return engine.Holder{Name: node.Name, Taints: node.Spec.Taints, Group: zoneOf(node)}
}

// zoneOf returns the node's topology.kubernetes.io/zone label, "" when it has none.
func zoneOf(node *v1.Node) string { return node.Labels[v1.LabelTopologyZone] }
