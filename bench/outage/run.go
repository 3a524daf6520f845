package outage

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"

	"github.com/taintevict/taintevict/bench/apparatus"
)

// Config is one outage.
type Config struct {
	// Impl is the side, one of Impls: "kube", "taintevict" or "floor".
	Impl string
	// Pods is the number of pods; half of them tolerate the taint for 300 s.
	Pods int
	// PodsPerNode is how many pods a node holds; 0 means 30.
	PodsPerNode int
	// Timeout bounds the wait for the evictions; 0 means 10 minutes.
	Timeout time.Duration
	// BeforeOutage, if not nil, is called right before the measurement starts, once the
	// controller is idle with the untainted cluster; AfterOutage, if not nil, once everything
	// is measured, while the controller still runs (to write heap profiles, say, whose
	// difference is the heap growth).
	BeforeOutage, AfterOutage func()
}

// Result is what Run measured.
type Result struct {
	Impl  string `json:"impl"`
	Pods  int    `json:"pods"`
	Nodes int    `json:"nodes"`
	// Devices is the number of tainted devices of a device outage (RunDevice), whose
	// Nodes are its pools.
	Devices int `json:"devices,omitempty"`
	// Evicted is the number of untolerating pods whose DELETE arrived, all of them.
	Evicted int `json:"evicted"`
	// Seconds is the time from the first node update with the taint until the last of
	// those DELETEs arrived.
	Seconds float64 `json:"seconds"`
	// GoroutinesPeak is the most goroutines alive at once during the outage, and
	// GoroutinesBefore the number before it.
	GoroutinesPeak   int `json:"goroutines_peak"`
	GoroutinesBefore int `json:"goroutines_before"`
	// HeapGrowthMB is the live heap (after a GC) once every DELETE has arrived and every
	// deletion has reached the pod informer's store and the controller, which is then idle,
	// less the live heap before the outage; HeapPeakMB is the peak of heap objects until
	// then, less the same baseline. GoroutinesPeak is sampled until then too.
	HeapGrowthMB float64 `json:"heap_growth_mb"`
	HeapPeakMB   float64 `json:"heap_peak_mb"`
	// RSSPeakMB is the peak resident set of the whole process (VmHWM), informer caches and
	// the cluster's objects included.
	RSSPeakMB float64 `json:"rss_peak_mb"`
	// Requests are the API requests answered, by verb, until the last DELETE.
	Requests apparatus.Counts `json:"requests"`
	// RequestsPerEviction is the pod requests over Evicted.
	RequestsPerEviction float64 `json:"requests_per_eviction"`
	// WronglyDeleted counts tolerating pods deleted during the run: it must be 0.
	WronglyDeleted int `json:"wrongly_deleted"`
	// CachedPods is the number of pods in the pod informer's store once the deletions have
	// been delivered: the tolerating ones.
	CachedPods int `json:"cached_pods"`
}

// Run builds the cluster, makes and runs the controller, feeds it the untainted cluster and
// waits until it is idle, then taints every node and measures the time until every
// untolerating pod's DELETE has arrived, and the heap once those deletions have been
// delivered to the informer and the controller (see apparatus.PodWatch). It stops the
// controller before it returns.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	cluster := apparatus.NewCluster(cfg.Pods, cfg.PodsPerNode)
	client := apparatus.NewClient(fake.NewClientset(), cluster)
	r := &rig{cluster: cluster, client: client, deletes: newDeleteCounter(cluster.Untolerating())}

	// Neither side's logging is measured: client-go's event recorder logs through klog's
	// global logger (kube's controller logs an error for every event dropped when more than
	// 1,000 are queued), the controllers through ctx's.
	klog.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, logr.Discard()))
	defer cancel()
	r.factory = informers.NewSharedInformerFactory(client, 0)
	var err error
	if r.side, err = newSide(ctx, cfg.Impl, client, r.factory); err != nil {
		return Result{}, err
	}
	r.watch = watchDeletions(client, cluster, r.factory, r.side, r.deletes)
	stopped, err := start(ctx, r.side, r.factory, cluster, r.watch)
	if err != nil {
		return Result{}, err
	}
	defer func() { cancel(); <-stopped; r.factory.Shutdown() }()

	res := Result{Impl: cfg.Impl, Pods: len(cluster.Pods), Nodes: len(cluster.Nodes)}
	if err := feedUntainted(ctx, r.side, cluster); err != nil {
		return res, err
	}
	if err := r.outage(ctx, &res, cfg); err != nil {
		return res, err
	}
	if cfg.AfterOutage != nil {
		cfg.AfterOutage()
	}
	return res, nil
}

// rig is one outage's apparatus and controller.
type rig struct {
	cluster *apparatus.Cluster
	client  *apparatus.Client
	factory informers.SharedInformerFactory
	side    *Side
	deletes *deleteCounter
	watch   *apparatus.PodWatch
}

// outage taints every node, measures, and fills res.
func (r *rig) outage(ctx context.Context, res *Result, cfg Config) error {
	if cfg.BeforeOutage != nil {
		cfg.BeforeOutage()
	}
	settled := func() error {
		return waitFor(ctx, cfg.Timeout, func() bool { return r.watch.Idle() && r.side.Idle() })
	}
	if err := measure(res, cfg.Timeout, r.deletes, func(t0 time.Time) error {
		return taintAll(r.factory, r.side, r.cluster, t0)
	}, settled); err != nil {
		return err
	}
	if err := r.watch.Err(); err != nil {
		return err
	}
	res.CachedPods = len(r.factory.Core().V1().Pods().Informer().GetStore().ListKeys())
	res.Requests = r.client.Counts()
	res.RequestsPerEviction = float64(res.Requests.PodRequests()) / float64(res.Evicted)
	return nil
}

func (cfg Config) withDefaults() Config {
	if cfg.PodsPerNode == 0 {
		cfg.PodsPerNode = 30
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Minute
	}
	return cfg
}

// deleteCounter counts the DELETEs of untolerating pods, notes when the last one arrived,
// and counts the DELETEs of tolerating pods, which must not happen.
type deleteCounter struct {
	want           int64
	evicted, wrong atomic.Int64
	allDeleted     chan time.Time
}

func newDeleteCounter(want int) *deleteCounter {
	return &deleteCounter{want: int64(want), allDeleted: make(chan time.Time, 1)}
}

func (d *deleteCounter) onDelete(i int) {
	if apparatus.Tolerates(i) {
		d.wrong.Add(1)
	} else if d.evicted.Add(1) == d.want {
		d.allDeleted <- time.Now()
	}
}

// watchDeletions makes the PodWatch that delivers the deletions client answers to the pod
// informer's store and to the controller, and makes client count each DELETE and then
// queue it for the watch.
func watchDeletions(client *apparatus.Client, cluster *apparatus.Cluster, factory informers.SharedInformerFactory, side *Side, deletes *deleteCounter) *apparatus.PodWatch {
	store := factory.Core().V1().Pods().Informer().GetIndexer()
	watch := apparatus.NewPodWatch(cluster, store, func(old *v1.Pod) { side.Updates.PodUpdated(old, nil) })
	client.OnDelete = func(i int) {
		deletes.onDelete(i)
		watch.Deleted(i)
	}
	return watch
}

// measure runs outage (given the time it starts) and fills res with the time until every
// untolerating pod's DELETE arrived, the goroutines and the heap. The heap after the outage
// is read once settled has returned: the deletions delivered, and the controller idle.
func measure(res *Result, timeout time.Duration, deletes *deleteCounter, outage func(t0 time.Time) error, settled func() error) error {
	heapBefore := liveHeap()
	res.GoroutinesBefore = runtime.NumGoroutine()
	smp := startSampler()
	t0 := time.Now()
	if err := outage(t0); err != nil {
		smp.finish()
		return err
	}
	select {
	case t1 := <-deletes.allDeleted:
		res.Seconds = t1.Sub(t0).Seconds()
	case <-time.After(timeout):
		smp.finish()
		return fmt.Errorf("outage: after %v, %d of %d evictions had arrived", timeout, deletes.evicted.Load(), deletes.want)
	}
	if err := settled(); err != nil {
		smp.finish()
		return err
	}
	peakG, peakHeap := smp.finish()
	heapAfter := liveHeap()
	res.Evicted, res.WronglyDeleted = int(deletes.evicted.Load()), int(deletes.wrong.Load())
	res.GoroutinesPeak = peakG
	res.HeapGrowthMB = mb(int64(heapAfter) - int64(heapBefore))
	res.HeapPeakMB = mb(int64(peakHeap) - int64(heapBefore))
	res.RSSPeakMB = mb(int64(peakRSS()))
	return nil
}

// taintAll gives every node the unreachable taint, as the node lifecycle controller does
// in a zone outage: in the cluster, then in the node informer's store, then the
// controller's update, as an informer calls its handlers after updating its store. The
// untainted node is then held by nothing.
func taintAll(factory informers.SharedInformerFactory, side *Side, cluster *apparatus.Cluster, at time.Time) error {
	store := factory.Core().V1().Nodes().Informer().GetIndexer()
	for i := range cluster.Nodes {
		old, tainted := cluster.Taint(i, at)
		if err := store.Update(tainted); err != nil {
			return fmt.Errorf("outage: updating node %s in the store: %w", old.Name, err)
		}
		side.Updates.NodeUpdated(old, tainted)
	}
	return nil
}

// start starts the informers on the empty fake clientset, waits for them to sync, fills
// their stores with the cluster, and starts the controller and the watch of deletions. The
// returned channel is closed when both have returned.
func start(ctx context.Context, side *Side, factory informers.SharedInformerFactory, cluster *apparatus.Cluster, watch *apparatus.PodWatch) (<-chan struct{}, error) {
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("outage: the %v informer did not sync", typ)
		}
	}
	podStore := factory.Core().V1().Pods().Informer().GetIndexer()
	nodeStore := factory.Core().V1().Nodes().Informer().GetIndexer()
	if err := cluster.Fill(podStore, nodeStore); err != nil {
		return nil, err
	}
	stopped := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { _ = side.Run(ctx) })
	wg.Go(func() { watch.Run(ctx) })
	go func() { wg.Wait(); close(stopped) }()
	return stopped, nil
}

// feedUntainted gives the controller the cluster as an informer's initial list would, and
// waits until it has processed it.
func feedUntainted(ctx context.Context, side *Side, cluster *apparatus.Cluster) error {
	for _, n := range cluster.Nodes {
		side.Updates.NodeUpdated(nil, n)
	}
	for _, p := range cluster.Pods {
		side.Updates.PodUpdated(nil, p)
	}
	return waitFor(ctx, time.Minute, side.Idle)
}

// waitFor polls cond every 10 ms until it holds, for at most limit.
func waitFor(ctx context.Context, limit time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("outage: the controller was not idle within %v", limit)
		case <-tick.C:
		}
	}
	return nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
