package clientgo

import (
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/taintevict/taintevict/eviction"
)

// storeCache returns an InformerCache over stores that the test fills itself, without
// starting the informers.
func storeCache(t testing.TB) (InformerCache, cache.Indexer, cache.Indexer) {
	inf, err := NewInformers(NewFactory(fake.NewClientset()))
	if err != nil {
		t.Fatal(err)
	}
	return NewInformerCache(inf), inf.Pods.GetIndexer(), inf.Nodes.GetIndexer()
}

// TestInformerCacheErrors checks that lookups fail as the listers do, NotFound naming the
// resource and the object, and that a store holding another type gives an error, where a
// lister would panic.
func TestInformerCacheErrors(t *testing.T) {
	c, pods, nodes := storeCache(t)
	if err := pods.Add(podOn("a", "p1", "node-1")); err != nil {
		t.Fatal(err)
	}
	if err := nodes.Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}); err != nil {
		t.Fatal(err)
	}

	_, err := c.Pod("a", "p2")
	if !apierrors.IsNotFound(err) {
		t.Errorf("missing pod: %v", err)
	}
	if got, want := fmt.Sprint(err), `pod "p2" not found`; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	_, err = c.Pod("b", "p1")
	if !apierrors.IsNotFound(err) {
		t.Errorf("same name, other namespace: %v", err)
	}
	_, err = c.Node("node-2")
	if got, want := fmt.Sprint(err), `node "node-2" not found`; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	// The pod informer's index refuses other types; a store without it takes them.
	plain := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := plain.Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "odd"}}); err != nil {
		t.Fatal(err)
	}
	_, err = InformerCache{pods: plain, nodes: nodes}.Pod("a", "odd")
	if err == nil || err.Error() != `clientgo: the pod store holds a *v1.Node under "a/odd"` {
		t.Errorf("got %v, want the error %q", err, `clientgo: the pod store holds a *v1.Node under "a/odd"`)
	}
	if err := nodes.Add(podOn("", "odd", "")); err != nil {
		t.Fatal(err)
	}
	_, err = c.Node("odd")
	if err == nil || err.Error() != `clientgo: the node store holds a *v1.Pod under "odd"` {
		t.Errorf("got %v, want the error %q", err, `clientgo: the node store holds a *v1.Pod under "odd"`)
	}
}

// BenchmarkInformerCache reads a pod and its node, as the Manager does several times for
// each pod it evicts, from stores of 10,000 pods on 100 nodes.
func BenchmarkInformerCache(b *testing.B) {
	c, pods, nodes := storeCache(b)
	for i := range 100 {
		if err := nodes.Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 10_000 {
		if err := pods.Add(podOn(fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("pod-%d", i), fmt.Sprintf("node-%d", i%100))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		pod, err := c.Pod("ns-7", "pod-4567")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Node(pod.Spec.NodeName); err != nil {
			b.Fatal(err)
		}
	}
}

// TestManagerCache checks the Manager's view of the stores: the same objects and errors as
// InformerCache, except that a missing pod or node is nil with a nil error, which
// eviction.Cache reads as "does not exist", as it does NotFound.
func TestManagerCache(t *testing.T) {
	c, pods, nodes := storeCache(t)
	m := managerCache(c)
	pod, node := podOn("a", "p1", "node-1"), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	if err := pods.Add(pod); err != nil {
		t.Fatal(err)
	}
	if err := nodes.Add(node); err != nil {
		t.Fatal(err)
	}

	got, err := m.Pod("a", "p1")
	if err != nil {
		t.Fatal(err)
	}
	if got != pod {
		t.Errorf("got %p, want %p (the same pointer)", got, pod)
	}
	gotNode, err := m.Node("node-1")
	if err != nil {
		t.Fatal(err)
	}
	if gotNode != node {
		t.Errorf("got %p, want %p (the same pointer)", gotNode, node)
	}
	pods2, err := m.PodsOnNode("node-1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pods2, []*v1.Pod{pod}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	for _, tc := range []struct {
		name   string
		lookup func() (runtime.Object, error)
	}{
		{"missing pod", func() (runtime.Object, error) { return m.Pod("a", "p2") }},
		{"same name, other namespace", func() (runtime.Object, error) { return m.Pod("b", "p1") }},
		{"missing node", func() (runtime.Object, error) { return m.Node("node-2") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := tc.lookup()
			if err != nil {
				t.Error(err)
			}
			if !(obj == nil || reflect.ValueOf(obj).IsNil()) {
				t.Errorf("got %v, want nil", obj)
			}
		})
	}

	plain := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := plain.Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "odd"}}); err != nil {
		t.Fatal(err)
	}
	_, err = managerCache(InformerCache{pods: plain, nodes: nodes}).Pod("a", "odd")
	if err == nil || err.Error() != `clientgo: the pod store holds a *v1.Node under "a/odd"` {
		t.Errorf("got %v, want the error %q", err, `clientgo: the pod store holds a *v1.Node under "a/odd"`)
	}
}

// BenchmarkCacheMiss looks up a pod that is not in a store of 10,000 pods, as the Manager
// does for every pod whose deletion arrives: through InformerCache, which returns the
// listers' NotFound error, and through the Controller's managerCache, which returns nil.
func BenchmarkCacheMiss(b *testing.B) {
	c, pods, _ := storeCache(b)
	for i := range 10_000 {
		if err := pods.Add(podOn(fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("pod-%d", i), fmt.Sprintf("node-%d", i%100))); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name  string
		cache eviction.Cache
	}{{"InformerCache", c}, {"managerCache", managerCache(c)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if pod, err := bc.cache.Pod("ns-7", "pod-gone"); pod != nil || err != nil && !apierrors.IsNotFound(err) {
					b.Fatal(pod, err)
				}
			}
		})
	}
}
