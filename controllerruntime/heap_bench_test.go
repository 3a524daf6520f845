package controllerruntime_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/controllerruntime"
)

var heapPods = flag.Int("heap.pods", 3000, "BenchmarkHeapSynced: the pods of its cluster, 30 to a node (BENCHMARKS.md's figure is of 150000)")

// BenchmarkHeapSynced measures the heap that each side holds once its informers have synced
// and its Manager has been handed, and has processed, every node and pod: clientgo's
// Controller on a SharedInformerFactory (clientgo.NewFactory), and this package's in a
// controller-runtime manager, whose cache strips managedFields as NewFactory does. Both
// list the same cluster from the same real API server: -heap.pods pods, 30 to a node, in
// 10 namespaces' worth of labels, half of them tolerating the not-ready and unreachable
// taints for 300 s, as the DefaultTolerationSeconds admission plugin has them; no node is
// tainted. The informers/ sides are the same caches without a Controller: the cache's own
// share. MB-heap is the live heap after a forced collection, less the same before the side
// started; the cluster is built once per process, before the first side.
//
//	go test -run '^$' -bench HeapSynced -benchtime 1x -count 5 -args -heap.pods 150000
func BenchmarkHeapSynced(b *testing.B) {
	buildHeapCluster(b, *heapPods)
	for _, side := range []struct {
		name  string
		start startSide
	}{
		{"informers/clientgo", clientgoInformers},
		{"informers/controller-runtime", managerInformers},
		{"clientgo", clientgoController},
		{"controller-runtime", managerController},
	} {
		b.Run(side.name, func(b *testing.B) {
			var sum float64
			for b.Loop() {
				sum += heapOf(b, side.start)
			}
			b.ReportMetric(sum/float64(b.N)/1e6, "MB-heap")
		})
	}
}

// startSide starts a side on ctx and returns a function that waits until it has synced (and
// its Manager is idle), and a channel closed once all of its goroutines have returned after
// ctx is done.
type startSide func(ctx context.Context) (synced func(context.Context) error, stopped <-chan struct{}, err error)

// heapOf starts a side, waits until it has synced, and returns the live heap it added; it
// stops the side and waits for it before it returns.
func heapOf(b *testing.B, start startSide) float64 {
	before := liveHeap()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	synced, stopped, err := start(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { cancel(); <-stopped }()
	if err := synced(ctx); err != nil {
		b.Fatal(err)
	}
	return float64(liveHeap()) - float64(before)
}

// liveHeap returns the bytes of live heap objects after two forced collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// goStop runs f in a goroutine and returns a channel closed when it has returned.
func goStop(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	return done
}

func clientgoInformers(ctx context.Context) (func(context.Context) error, <-chan struct{}, error) {
	factory := clientgo.NewFactory(kubernetes.NewForConfigOrDie(adminConfig))
	if _, err := clientgo.NewInformers(factory); err != nil {
		return nil, nil, err
	}
	factory.Start(ctx.Done())
	stopped := goStop(func() { <-ctx.Done(); factory.Shutdown() })
	return func(ctx context.Context) error { return factory.WaitForCacheSyncWithContext(ctx).AsError() }, stopped, nil
}

func clientgoController(ctx context.Context) (func(context.Context) error, <-chan struct{}, error) {
	client := kubernetes.NewForConfigOrDie(adminConfig)
	c, err := clientgo.NewController(ctx, client, clientgo.NewFactory(client), clientgo.Options{})
	if err != nil {
		return nil, nil, err
	}
	stopped := goStop(func() { _ = c.Run(ctx) })
	return func(ctx context.Context) error { return syncedIdle(ctx, c.Synced(), c.Manager().WaitIdle) }, stopped, nil
}

// syncedIdle waits until synced is closed, then until the Manager is idle.
func syncedIdle(ctx context.Context, synced <-chan struct{}, waitIdle func(context.Context) error) error {
	select {
	case <-synced:
		return waitIdle(ctx)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// heapManager returns a manager whose cache strips managedFields, as clientgo.NewFactory
// does, with what add adds, started on ctx.
func heapManager(ctx context.Context, add func(manager.Manager) error) (manager.Manager, <-chan struct{}, error) {
	mgr, err := manager.New(adminConfig, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	if err == nil {
		err = add(mgr)
	}
	if err != nil {
		return nil, nil, err
	}
	return mgr, goStop(func() { _ = mgr.Start(ctx) }), nil
}

func managerInformers(ctx context.Context) (func(context.Context) error, <-chan struct{}, error) {
	mgr, stopped, err := heapManager(ctx, func(mgr manager.Manager) error {
		// The Controller's informers and index, as New makes them.
		err := mgr.GetFieldIndexer().IndexField(ctx, &v1.Pod{}, clientgo.NodeNameIndex, func(o client.Object) []string {
			if n := o.(*v1.Pod).Spec.NodeName; n != "" {
				return []string{n}
			}
			return nil
		})
		if err == nil {
			_, err = mgr.GetCache().GetInformer(ctx, &v1.Node{})
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("the manager's cache did not sync: %w", ctx.Err())
		}
		return nil
	}, stopped, nil
}

func managerController(ctx context.Context) (func(context.Context) error, <-chan struct{}, error) {
	var c *controllerruntime.Controller
	_, stopped, err := heapManager(ctx, func(mgr manager.Manager) (err error) {
		c, err = controllerruntime.New(ctx, mgr, controllerruntime.Options{})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) error { return syncedIdle(ctx, c.Synced(), c.Manager().WaitIdle) }, stopped, nil
}

var heapCluster sync.Once

// buildHeapCluster creates, once per process, pods pods on pods/30 nodes, through the
// admin client, many at once.
func buildHeapCluster(b *testing.B, pods int) {
	heapCluster.Do(func() {
		ctx := b.Context()
		nodes := (pods + 29) / 30
		var g errgroup.Group
		g.SetLimit(64)
		for i := range nodes {
			g.Go(func() error {
				_, err := admin.CoreV1().Nodes().Create(ctx, heapNode(i), metav1.CreateOptions{})
				return err
			})
		}
		for ns := range 10 {
			g.Go(func() error {
				_, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("heap-%d", ns)}}, metav1.CreateOptions{})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatalf("building the cluster: %v", err)
		}
		for i := range pods {
			g.Go(func() error {
				p := heapPod(i)
				_, err := admin.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatalf("building the cluster: %v", err)
		}
	})
}

func heapNode(i int) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   fmt.Sprintf("heap-node-%d", i),
		Labels: map[string]string{v1.LabelTopologyZone: "zone-a", v1.LabelHostname: fmt.Sprintf("heap-node-%d", i)},
	}}
}

// heapPod is pod i of the cluster: as bench/apparatus makes them, on node i/30.
func heapPod(i int) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("heap-%d", i%10),
			Name:      fmt.Sprintf("pod-%d", i),
			Labels:    map[string]string{"app": fmt.Sprintf("app-%d", i%100)},
		},
		Spec: v1.PodSpec{
			NodeName: fmt.Sprintf("heap-node-%d", i/30),
			Containers: []v1.Container{{
				Name:  "main",
				Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi"),
				}},
			}},
		},
	}
	if i%2 == 0 {
		secs := int64(300)
		p.Spec.Tolerations = []v1.Toleration{
			{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs},
			{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs},
		}
	}
	return p
}
