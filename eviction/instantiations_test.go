package eviction_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// manager is what the behaviour tests drive: an eviction.Manager, or the engine instantiated
// another way and fed the same node and pod updates.
type manager interface {
	NodeUpdated(old, new *v1.Node)
	PodUpdated(old, new *v1.Pod)
	Pending() []eviction.Pending
	Stats() eviction.Stats
	Backlog() int
	Run(ctx context.Context) error
	WaitIdle(ctx context.Context) error
	Records() int
	Synced()
}

// instantiation is one of the engines every behaviour test runs on.
type instantiation struct {
	name string
	new  func(d eviction.Deleter, c eviction.Cache, opts eviction.Options) (manager, error)
}

// instantiations are the two: the pods-on-nodes Manager, one binding per pod; and an engine
// whose pods are bound to two holders each, their node and a device on it (see onDevices).
var instantiations = []instantiation{
	{"nodes", func(d eviction.Deleter, c eviction.Cache, opts eviction.Options) (manager, error) {
		m, err := eviction.New(d, c, opts)
		if m == nil {
			return nil, err // no typed nil in the interface
		}
		return m, err
	}},
	{"devices", newOnDevices},
}

// current maps each test running in a bubble to its instantiation.
var current sync.Map // *testing.T -> instantiation

// synctestRun runs f in a synctest bubble, as a subtest named name, once on each
// instantiation (subtests name/nodes and name/devices): newManager and the harness make the
// engine of the subtest's instantiation.
func synctestRun(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) { synctestEach(t, f) })
}

// synctestEach runs f in a synctest bubble once on each instantiation, as the subtests
// nodes and devices of t.
func synctestEach(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, in := range instantiations {
		t.Run(in.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				current.Store(t, in)
				defer current.Delete(t)
				f(t)
			})
		})
	}
}

// synctestRunManager runs f in a synctest bubble, as a subtest named name, on the Manager
// only: for what belongs to the Manager rather than to the engine, such as which node and
// pod updates it passes on.
func synctestRunManager(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) { synctest.Test(t, f) })
}

// newManager makes the engine of t's instantiation: the Manager outside synctestRun.
func newManager(t *testing.T, d eviction.Deleter, c eviction.Cache, opts eviction.Options) (manager, error) {
	in := instantiations[0]
	if v, ok := current.Load(t); ok {
		in = v.(instantiation)
	}
	return in.new(d, c, opts)
}

// device is the name of the device holder on node.
func device(node string) string { return node + "/gpu-0" }

// onDevices is the engine instantiated for pods bound to two holders each: the node in
// spec.nodeName and the device device(node) on it, with spec.tolerations for both. Its
// Source reads the same Cache as the Manager; a device exists while its node does, and its
// taints are those setDevice gave it (none, in the behaviour tests shared with the Manager,
// which then must see the same decisions and reports on both).
type onDevices struct {
	e   *engine.Engine[*v1.Pod]
	src *deviceSource
}

func newOnDevices(d eviction.Deleter, c eviction.Cache, opts eviction.Options) (manager, error) {
	src := &deviceSource{c: c, taints: map[string][]v1.Taint{}}
	eo := opts // one contract: the Manager's options are the engine's
	var act engine.Actuator
	if d != nil {
		act = eviction.PodActuator(d)
	}
	e, err := engine.New(act, engine.Source[*v1.Pod](src), eo)
	if err != nil {
		return nil, err
	}
	return &onDevices{e: e, src: src}, nil
}

func (o *onDevices) NodeUpdated(old, new *v1.Node) {
	switch {
	case new == nil && old == nil:
	case new == nil:
		o.e.HolderDeleted(old.Name)
	case old == nil || old.Labels[v1.LabelTopologyZone] != new.Labels[v1.LabelTopologyZone] ||
		engine.TaintsChanged(old.Spec.Taints, new.Spec.Taints):
		o.e.HolderUpdated(engine.Holder{Name: new.Name, Taints: new.Spec.Taints, Group: new.Labels[v1.LabelTopologyZone]})
	}
}

func (o *onDevices) PodUpdated(old, new *v1.Pod) {
	switch {
	case new == nil && old == nil:
	case new == nil:
		o.e.TargetDeleted(old)
	case old == nil && new.Spec.NodeName == "":
	case old != nil && (old.Namespace != new.Namespace || old.Name != new.Name):
		o.e.TargetDeleted(old)
		o.e.TargetUpdated(new)
	default:
		o.e.TargetUpdated(new)
	}
}

// setDevice gives the device on node its taints and tells the engine.
func (o *onDevices) setDevice(node string, taints ...v1.Taint) {
	o.src.mu.Lock()
	o.src.taints[device(node)] = taints
	o.src.mu.Unlock()
	o.e.HolderUpdated(engine.Holder{Name: device(node), Taints: taints})
}

func (o *onDevices) Pending() []eviction.Pending {
	return o.e.Pending()
}

func (o *onDevices) Stats() eviction.Stats { return o.e.Stats() }

func (o *onDevices) Backlog() int { return o.e.Backlog() }
func (o *onDevices) Run(ctx context.Context) error {
	if err := o.e.Run(ctx); !errors.Is(err, engine.ErrRunTwice) {
		return err
	}
	return eviction.ErrRunTwice // the Manager's sentinel, for the tests shared with it
}

func (o *onDevices) WaitIdle(ctx context.Context) error {
	if err := o.e.WaitIdle(ctx); !errors.Is(err, engine.ErrStopped) {
		return err
	}
	return eviction.ErrStopped
}
func (o *onDevices) Records() int { return o.e.Len() }

func (o *onDevices) Synced() { o.e.Synced() }

// deviceSource is onDevices' Source: pods and nodes from an eviction.Cache, devices from
// its own table.
type deviceSource struct {
	c      eviction.Cache
	mu     sync.Mutex
	taints map[string][]v1.Taint
}

func (s *deviceSource) Target(key types.NamespacedName) (*v1.Pod, bool, error) {
	pod, err := s.c.Pod(key.Namespace, key.Name)
	if err != nil {
		return nil, false, err
	}
	return pod, pod != nil, nil
}

func (s *deviceSource) TargetsOn(holder string) ([]*v1.Pod, error) {
	node := strings.TrimSuffix(holder, "/gpu-0")
	pods, err := s.c.PodsOnNode(node)
	if err != nil {
		return nil, err
	}
	var out []*v1.Pod
	for _, p := range pods {
		if p != nil && p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, nil
}

func (s *deviceSource) Holder(name string) (engine.Holder, bool, error) {
	node, isDevice := strings.CutSuffix(name, "/gpu-0")
	n, err := s.c.Node(node)
	switch {
	case err != nil && apierrors.IsNotFound(err), err == nil && n == nil:
		return engine.Holder{}, false, nil
	case err != nil:
		return engine.Holder{}, false, err
	case !isDevice:
		return engine.Holder{Name: name, Taints: n.Spec.Taints, Group: n.Labels[v1.LabelTopologyZone]}, true, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return engine.Holder{Name: name, Taints: s.taints[name]}, true, nil
}

func (s *deviceSource) Locate(pod *v1.Pod) (types.NamespacedName, string) {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, pod.Spec.NodeName
}

func (s *deviceSource) Describe(pod *v1.Pod, d *engine.Target) {
	d.Key = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	d.UID = pod.UID
	d.Owner, d.Created = eviction.PodOwner(pod), pod.CreationTimestamp.Time
	switch {
	case pod.DeletionTimestamp != nil:
		d.Leaving = eviction.ReasonPodTerminating
	case pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed:
		d.Leaving = eviction.ReasonPodFinished
	}
	if pod.Spec.NodeName != "" {
		d.Bindings = append(d.Bindings,
			engine.Binding{Holder: pod.Spec.NodeName, Tolerations: pod.Spec.Tolerations},
			engine.Binding{Holder: device(pod.Spec.NodeName), Tolerations: pod.Spec.Tolerations})
	}
}
