package outage

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"

	"github.com/taintevict/taintevict/bench/apparatus"
)

// Config is one outage.
type Config struct {
	// Impl is the controller: "kube" or "taintevict".
	Impl string
	// Pods is the number of pods; half of them tolerate the taint for 300 s.
	Pods int
	// PodsPerNode is how many pods a node holds; 0 means 30.
	PodsPerNode int
	// Timeout bounds the wait for the evictions; 0 means 10 minutes.
	Timeout time.Duration
	// AfterOutage, if not nil, is called once everything is measured, while the controller
	// still runs (to write a heap profile, say).
	AfterOutage func()
}

// Result is what Run measured.
type Result struct {
	Impl  string `json:"impl"`
	Pods  int    `json:"pods"`
	Nodes int    `json:"nodes"`
	// Evicted is the number of untolerating pods whose DELETE arrived, all of them.
	Evicted int `json:"evicted"`
	// Seconds is the time from the first node update with the taint until the last of
	// those DELETEs arrived.
	Seconds float64 `json:"seconds"`
	// GoroutinesPeak is the most goroutines alive at once during the outage, and
	// GoroutinesBefore the number before it.
	GoroutinesPeak   int `json:"goroutines_peak"`
	GoroutinesBefore int `json:"goroutines_before"`
	// HeapGrowthMB is the live heap (after a GC) once every DELETE has arrived, less the
	// live heap before the outage; HeapPeakMB is the peak of heap objects during the outage,
	// less the same baseline.
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
}

// Run builds the cluster, makes and runs the controller, feeds it the untainted cluster and
// waits until it is idle, then taints every node and measures until every untolerating
// pod's DELETE has arrived. It stops the controller before it returns.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.PodsPerNode == 0 {
		cfg.PodsPerNode = 30
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Minute
	}
	cluster := apparatus.NewCluster(cfg.Pods, cfg.PodsPerNode)
	client := apparatus.NewClient(fake.NewClientset(), cluster)
	deletes := newDeleteCounter(cluster.Untolerating())
	client.OnDelete = deletes.onDelete

	// Neither side's logging is measured: client-go's event recorder logs through klog's
	// global logger (kube's controller logs an error for every event dropped when more than
	// 1,000 are queued), the controllers through ctx's.
	klog.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, logr.Discard()))
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	side, err := newSide(ctx, cfg.Impl, client, factory)
	if err != nil {
		return Result{}, err
	}
	stopped, err := start(ctx, side, factory, cluster)
	if err != nil {
		return Result{}, err
	}
	defer func() { cancel(); <-stopped; factory.Shutdown() }()

	res := Result{Impl: cfg.Impl, Pods: len(cluster.Pods), Nodes: len(cluster.Nodes)}
	if err := feedUntainted(ctx, side, cluster); err != nil {
		return res, err
	}
	if err := measure(&res, cfg.Timeout, deletes, func(t0 time.Time) error {
		return taintAll(factory, side, cluster, t0)
	}); err != nil {
		return res, err
	}
	res.Requests = client.Counts()
	res.RequestsPerEviction = float64(res.Requests.PodRequests()) / float64(res.Evicted)
	if cfg.AfterOutage != nil {
		cfg.AfterOutage()
	}
	return res, nil
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

// measure runs outage (given the time it starts) and fills res with the time until every
// untolerating pod's DELETE arrived, the goroutines and the heap.
func measure(res *Result, timeout time.Duration, deletes *deleteCounter, outage func(t0 time.Time) error) error {
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
// in a zone outage: the node informer's store first, then the controller's update, as an
// informer calls its handlers after updating its store.
func taintAll(factory informers.SharedInformerFactory, side *Side, cluster *apparatus.Cluster, at time.Time) error {
	store := factory.Core().V1().Nodes().Informer().GetIndexer()
	for _, n := range cluster.Nodes {
		tainted := apparatus.Unreachable(n, at)
		if err := store.Update(tainted); err != nil {
			return fmt.Errorf("outage: updating node %s in the store: %w", n.Name, err)
		}
		side.Updates.NodeUpdated(n, tainted)
	}
	return nil
}

// start starts the informers on the empty fake clientset, waits for them to sync, fills
// their stores with the cluster, and starts the controller. The returned channel is closed
// when the controller's Run has returned.
func start(ctx context.Context, side *Side, factory informers.SharedInformerFactory, cluster *apparatus.Cluster) (<-chan struct{}, error) {
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
	go func() { defer close(stopped); _ = side.Run(ctx) }()
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
