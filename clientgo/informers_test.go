package clientgo

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// TestInformerCache reads a fake cluster through the informers' caches, as the Manager
// does.
func TestInformerCache(t *testing.T) {
	client := fake.NewClientset(
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
		podOn("a", "p1", "node-1"), podOn("b", "p2", "node-1"), podOn("a", "p3", "node-2"), podOn("a", "pending", ""),
	)
	factory := NewFactory(client)
	inf, err := NewInformers(factory)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	factory.StartWithContext(ctx)
	defer factory.Shutdown()
	defer cancel()
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
	c := NewInformerCache(inf)

	pods, err := c.PodsOnNode("node-1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	slices.Sort(names)
	if got, want := names, []string{"a/p1", "b/p2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	pods, err = c.PodsOnNode("node-9")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 0 {
		t.Errorf("got %v, want none", pods)
	}
	pods, err = c.PodsOnNode("")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 0 {
		t.Errorf("unbound pods are not indexed: got %v, want none", pods)
	}

	pod, err := c.Pod("b", "p2")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pod.Spec.NodeName, "node-1"; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	_, err = c.Pod("b", "p1")
	if !apierrors.IsNotFound(err) {
		t.Errorf("a missing pod is NotFound: %v", err)
	}

	node, err := c.Node("node-1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := node.Name, "node-1"; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	_, err = c.Node("node-2")
	if !apierrors.IsNotFound(err) {
		t.Errorf("a missing node is NotFound: %v", err)
	}
}

// call is one call of an Updater method: its name, and the names of old and new ("" for
// nil).
type call struct{ method, old, new string }

type recordingUpdater struct {
	mu    sync.Mutex
	calls []call
}

func (r *recordingUpdater) record(method string, old, new metav1.Object) {
	c := call{method: method}
	if !reflect.ValueOf(old).IsNil() {
		c.old = old.GetName()
	}
	if !reflect.ValueOf(new).IsNil() {
		c.new = new.GetName()
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *recordingUpdater) NodeUpdated(old, new *v1.Node) { r.record("NodeUpdated", old, new) }
func (r *recordingUpdater) PodUpdated(old, new *v1.Pod)   { r.record("PodUpdated", old, new) }

// TestHandlers checks kube's (old, new) convention, and that a delete the informer only
// noticed on a relist (a DeletedFinalStateUnknown) still reaches the Manager.
func TestHandlers(t *testing.T) {
	r := &recordingUpdater{}
	logger := klog.Background()
	nodes, pods := HandlerFuncs(logger, r.NodeUpdated), HandlerFuncs(logger, r.PodUpdated)
	n1, n2 := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	p1, p2 := podOn("a", "p1", "n1"), podOn("a", "p1", "n1")

	nodes.OnAdd(n1, true)
	nodes.OnUpdate(n1, n2)
	nodes.OnDelete(n2)
	nodes.OnDelete(cache.DeletedFinalStateUnknown{Key: "n1", Obj: n1})
	nodes.OnDelete(cache.DeletedFinalStateUnknown{Key: "n1", Obj: "junk"}) // ignored
	pods.OnAdd(p1, false)
	pods.OnUpdate(p1, p2)
	pods.OnDelete(p2)
	pods.OnDelete(cache.DeletedFinalStateUnknown{Key: "a/p1", Obj: p1})
	pods.OnDelete(42) // ignored

	if got, want := r.calls, []call{
		{"NodeUpdated", "", "n1"},
		{"NodeUpdated", "n1", "n1"},
		{"NodeUpdated", "n1", ""},
		{"NodeUpdated", "n1", ""},
		{"PodUpdated", "", "p1"},
		{"PodUpdated", "p1", "p1"},
		{"PodUpdated", "p1", ""},
		{"PodUpdated", "p1", ""},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestPodsByNodeName(t *testing.T) {
	keys, err := podsByNodeName(podOn("a", "p", "n1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keys, []string{"n1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	keys, err = podsByNodeName(podOn("a", "p", ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Errorf("got %v, want none", keys)
	}
	_, err = podsByNodeName(&v1.Node{})
	if err == nil {
		t.Errorf("got no error, want one")
	}
}

// TestDropManagedFields: the transform clears managedFields on a copy, leaving the object
// it was given as it was (someone else may hold it), and passes other objects through.
func TestDropManagedFields(t *testing.T) {
	pod := podOn("shop", "web-1", "node-1")
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	got, err := dropManagedFields(pod)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.(*v1.Pod).ManagedFields) != 0 {
		t.Errorf("the informer's copy: got %v, want none", got.(*v1.Pod).ManagedFields)
	}
	if len(pod.ManagedFields) != 1 {
		t.Errorf("the object given: got %d (%v), want %d", len(pod.ManagedFields), pod.ManagedFields, 1)
	}

	bare := podOn("shop", "web-2", "node-1")
	got, err = dropManagedFields(bare)
	if err != nil {
		t.Fatal(err)
	}
	if got != bare {
		t.Errorf("nothing to clear: no copy: got %p, want %p", got, bare)
	}
	got, err = dropManagedFields("not an object")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := got, "not an object"; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestNewInformersOnARunningFactory: NewInformers may add the spec.nodeName index to a pod
// informer that runs already (another part of the program registered it and started the
// factory): the pods it holds are indexed. On an informer that has stopped, it fails.
func TestNewInformersOnARunningFactory(t *testing.T) {
	client := fake.NewClientset(podOn("shop", "web-1", "node-1"), podOn("shop", "web-2", "node-2"))
	factory := NewFactory(client)
	pods := factory.Core().V1().Pods().Informer()
	ctx, cancel := context.WithCancel(t.Context())
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		t.Fatal("the pod informer did not sync")
	}
	inf, err := NewInformers(factory)
	if err != nil {
		t.Fatalf("NewInformers on a running factory: %v", err)
	}
	got, err := NewInformerCache(inf).PodsOnNode("node-1")
	if err != nil || len(got) != 1 || got[0].Name != "web-1" {
		t.Errorf("PodsOnNode(node-1) through the index added to the running informer: got %v, %v; want web-1", got, err)
	}
	cancel()
	factory.Shutdown()

	stopped := NewFactory(client)
	stopped.Core().V1().Pods().Informer()
	sctx, scancel := context.WithCancel(t.Context())
	stopped.Start(sctx.Done())
	scancel()
	stopped.Shutdown()
	if _, err := NewInformers(stopped); err == nil || !strings.HasPrefix(err.Error(), "clientgo: ") {
		t.Errorf("NewInformers on a stopped pod informer: got %v, want an error of clientgo", err)
	}
}

// TestTrim: NewFactory's transform drops from a pod what no taint eviction reads, and from
// a node its images, on a copy; it keeps what the node and device sides read.
func TestTrim(t *testing.T) {
	grace, prio := int64(30), int32(7)
	pod := podOn("shop", "web-1", "node-1")
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	pod.Labels = map[string]string{"app": "web"}
	pod.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-1a"}}
	pod.Spec.Containers = []v1.Container{{Name: "web", Image: "web:1"}}
	pod.Spec.Volumes = []v1.Volume{{Name: "data"}}
	pod.Spec.Affinity = &v1.Affinity{}
	pod.Spec.TerminationGracePeriodSeconds, pod.Spec.Priority = &grace, &prio
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu"}}
	pod.Status.Phase = v1.PodRunning
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget}}
	pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "web"}}
	pod.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu"}}
	given := pod.DeepCopy()
	got, err := Trim(pod)
	if err != nil {
		t.Fatal(err)
	}
	p := got.(*v1.Pod)
	if !reflect.DeepEqual(pod, given) {
		t.Errorf("the pod given was changed: %+v", pod)
	}
	if p.ManagedFields != nil || p.Spec.Containers != nil || p.Spec.Volumes != nil || p.Spec.Affinity != nil || p.Status.ContainerStatuses != nil {
		t.Errorf("kept what no taint eviction reads: %+v", p)
	}
	kept := given.DeepCopy()
	kept.ManagedFields, kept.Spec.Containers, kept.Spec.Volumes, kept.Spec.Affinity, kept.Status.ContainerStatuses = nil, nil, nil, nil, nil
	if !reflect.DeepEqual(p, kept) {
		t.Errorf("got %+v, want %+v", p, kept)
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{v1.LabelTopologyZone: "a"}},
		Spec:   v1.NodeSpec{Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoExecute}}},
		Status: v1.NodeStatus{Images: []v1.ContainerImage{{Names: []string{"web:1"}}}, Conditions: []v1.NodeCondition{{Type: v1.NodeReady}}}}
	got, err = Trim(node)
	if err != nil {
		t.Fatal(err)
	}
	if n := got.(*v1.Node); n.Status.Images != nil || len(node.Status.Images) != 1 || !reflect.DeepEqual(n.Spec, node.Spec) || len(n.Status.Conditions) != 1 {
		t.Errorf("node: got %+v from %+v, want its images dropped on a copy, the rest kept", n, node)
	}
	bare := podOn("shop", "web-2", "node-1")
	if got, _ := Trim(bare); got != bare {
		t.Errorf("nothing to drop: got a copy")
	}
}
