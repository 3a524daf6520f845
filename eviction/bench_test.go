package eviction_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// The benchmarks run the Manager on the real clock with its default options (8 event
// workers, 8 delete workers, the default delete timeout). Throughput is what they measure,
// so time is not faked: a FakeClock's Now takes a lock that every event worker and delete
// worker would contend on, which production does not have. The deadlines they schedule lie
// 300 s in the future, so no timer fires while a benchmark runs.
//
// Every helper here is prefixed with bench, so as not to collide with the package's tests.

const benchTaintKey = "node.kubernetes.io/unreachable"

// benchCounter counts events; one goroutine at a time may wait for the count to reach a
// mark.
type benchCounter struct {
	n      atomic.Int64
	mark   atomic.Int64
	target int64
	signal chan struct{}
}

func newBenchCounter(target int64) *benchCounter {
	c := &benchCounter{target: target, signal: make(chan struct{}, 1)}
	c.mark.Store(-1)
	return c
}

func (c *benchCounter) add() {
	if c.n.Add(1) == c.mark.Load() {
		select {
		case c.signal <- struct{}{}:
		default:
		}
	}
}

// waitFor waits until the count is at least n, failing b after a generous bound.
func (c *benchCounter) waitFor(b *testing.B, n int64, what string) {
	c.mark.Store(n)
	var timeout <-chan time.Time
	for c.n.Load() < n {
		if timeout == nil {
			timeout = time.After(2 * time.Minute)
		}
		select {
		case <-c.signal:
		case <-timeout:
			b.Fatalf("%s: %d of %d after 2 minutes", what, c.n.Load(), n)
		}
	}
}

// benchWait waits for c to reach its target.
func benchWait(b *testing.B, c *benchCounter, what string) {
	b.Helper()
	c.waitFor(b, c.target, what)
}

// benchObserver counts Scheduled and Cancelled into the counters it currently points to.
type benchObserver struct {
	eviction.NopObserver
	scheduled atomic.Pointer[benchCounter]
	cancelled atomic.Pointer[benchCounter]
}

func (o *benchObserver) Scheduled(eviction.PodRef, time.Time) {
	if c := o.scheduled.Load(); c != nil {
		c.add()
	}
}

func (o *benchObserver) Cancelled(eviction.PodRef, eviction.Reason) {
	if c := o.cancelled.Load(); c != nil {
		c.add()
	}
}

// benchManager is a running Manager and what it needs.
type benchManager struct {
	m       *eviction.Manager
	obs     *benchObserver
	deleted atomic.Pointer[benchCounter]
	stop    func()
}

// startBenchManager creates a Manager over cache with opts whose Deleter only counts, and
// runs it until stop is called.
func startBenchManager(b *testing.B, cache eviction.Cache, opts eviction.Options) *benchManager {
	b.Helper()
	bm := &benchManager{obs: &benchObserver{}}
	del := eviction.DeleterFunc(func(context.Context, eviction.PodRef) error {
		if c := bm.deleted.Load(); c != nil {
			c.add()
		}
		return nil
	})
	opts.Observer = bm.obs
	m, err := eviction.New(del, cache, opts)
	if err != nil {
		b.Fatal(err)
	}
	bm.m = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = m.Run(ctx)
	}()
	bm.stop = func() { cancel(); <-done }
	return bm
}

// benchDrain waits until the Manager has taken every queued update. Setup only: it polls.
func benchDrain(b *testing.B, m *eviction.Manager) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for m.Backlog() > 0 {
		if time.Now().After(deadline) {
			b.Fatalf("backlog still %d after 2 minutes", m.Backlog())
		}
		time.Sleep(time.Millisecond)
	}
}

// benchIdle waits until the Manager is idle (WaitIdle on the real clock: nothing due now).
func benchIdle(b *testing.B, m *eviction.Manager) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := m.WaitIdle(ctx); err != nil {
		b.Fatalf("WaitIdle: %v", err)
	}
}

// benchHeap returns the live heap after a collection.
func benchHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func benchNode(name string, taints ...v1.Taint) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.NodeSpec{Taints: taints},
	}
}

func benchTaint(added time.Time) v1.Taint {
	t := metav1.NewTime(added)
	return v1.Taint{Key: benchTaintKey, Effect: v1.TaintEffectNoExecute, TimeAdded: &t}
}

func benchSeconds(s int64) *int64 { return &s }

// benchTolerating tolerates the benchmark taint for 300 s, after a toleration of another
// key, as pods usually carry a few.
var benchTolerating = []v1.Toleration{
	{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: benchSeconds(300)},
	{Key: benchTaintKey, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: benchSeconds(300)},
}

// benchIntolerant tolerates another key only.
var benchIntolerant = []v1.Toleration{
	{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: benchSeconds(300)},
}

func benchPod(namespace, name, node string, tols []v1.Toleration) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + namespace + "-" + name)},
		Spec:       v1.PodSpec{NodeName: node, Tolerations: tols},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
}

// BenchmarkZoneOutage taints 5,000 nodes of 30 pods each (150,000 pods) with
// node.kubernetes.io/unreachable:NoExecute at once, all with the same TimeAdded, as the node
// lifecycle controller does when a zone goes dark. Half the pods tolerate the taint for
// 300 s and are scheduled; half do not tolerate it and are evicted at once, through a
// Deleter that only counts.
//
// One op is one outage: from the first NodeUpdated to the moment the Deleter has been called
// 75,000 times and all 150,000 pods have been scheduled (Observer.Scheduled); then Backlog
// must be 0 and Pending must hold the 75,000 tolerating pods. The cluster is built, the
// Manager created and run, and the untainted cluster fed to it (as an informer's initial
// list) outside the timed region.
//
// Metrics: ms/outage; B/pending, the live heap after the outage less the live heap before
// it (both after a GC, the Manager running), per pending eviction; B/pod, the same growth
// per pod of the cluster (150,000); and B/pending-settled, the same growth per pending
// eviction once the informer has reported the 75,000 evicted pods gone and the Manager is
// idle (WaitIdle, untimed, which gives back at once the storage the removals left, as the
// Manager does by itself a few seconds later): until then the Manager remembers each pod
// it deleted, so as not to delete it again while its cache lags. allocs/op and B/op count every allocation of the timed region, the Manager's
// goroutines included.
func BenchmarkZoneOutage(b *testing.B) { benchZoneOutage(b, eviction.Options{}) }

// BenchmarkZoneOutageBudgets is BenchmarkZoneOutage with eviction budgets on, so high that
// no eviction waits: what the gate costs. "rate" sets Options.RateLimit alone (a million a
// second, in bursts of a million); "all" adds a TaintRateLimits entry for the outage's taint
// and a Brake with both fractions at 1 (it counts every node update and looks at every
// eviction, but never pauses), so each eviction also works out the taint keys that make it
// due; "caps" has the other budgets instead (see there).
func BenchmarkZoneOutageBudgets(b *testing.B) {
	high := eviction.Limit{PerSecond: 1e6, Burst: 1e6}
	b.Run("rate", func(b *testing.B) { benchZoneOutage(b, eviction.Options{RateLimit: high}) })
	b.Run("all", func(b *testing.B) {
		benchZoneOutage(b, eviction.Options{
			RateLimit:       high,
			TaintRateLimits: map[string]eviction.Limit{benchTaintKey: high},
			Brake:           eviction.Brake{Fraction: 1, ZoneFraction: 1},
		})
	})
	// The budgets of issue 30, so loose that none holds: a bound in flight, windows per
	// namespace and per owner, loop damping, and Confirm with the Manager's census (which
	// counts every node and pod update), with a fraction of 1, which never holds.
	b.Run("caps", func(b *testing.B) {
		loose := eviction.Window{Max: 1 << 30, Per: time.Minute}
		benchZoneOutage(b, eviction.Options{
			InFlight:       eviction.InFlight{Max: 1 << 30},
			NamespaceLimit: loose,
			OwnerLimit:     loose,
			LoopDamping:    eviction.LoopDamping{Window: time.Hour},
			Confirm:        eviction.Confirm{Fraction: 1},
		})
	})
}

func benchZoneOutage(b *testing.B, opts eviction.Options) {
	const (
		nodes       = 5000
		podsPerNode = 30
		pods        = nodes * podsPerNode
		tolerating  = pods / 2
		intolerant  = pods - tolerating
	)
	cache := &evictiontest.Cache{}
	plain := make([]*v1.Node, nodes)
	allPods := make([]*v1.Pod, 0, pods)
	for i := range nodes {
		plain[i] = benchNode(fmt.Sprintf("node-%05d", i))
		cache.SetNode(plain[i])
		for j := range podsPerNode {
			tols := benchIntolerant
			if j%2 == 0 {
				tols = benchTolerating
			}
			p := benchPod(fmt.Sprintf("ns-%03d", i%100), fmt.Sprintf("pod-%05d-%02d", i, j), plain[i].Name, tols)
			cache.SetPod(p)
			allPods = append(allPods, p)
		}
	}

	var elapsed time.Duration
	var grown, settled float64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, n := range plain {
			cache.SetNode(n)
		}
		bm := startBenchManager(b, cache, opts)
		for _, n := range plain {
			bm.m.NodeUpdated(nil, n)
		}
		for _, p := range allPods {
			bm.m.PodUpdated(nil, p)
		}
		benchDrain(b, bm.m)
		bm.m.Synced() // the initial list is in, as the informers' HasSynced would say
		// The informer has the tainted nodes before it calls the handlers; the recheck
		// before each delete reads them.
		taint := benchTaint(time.Now())
		tainted := make([]*v1.Node, nodes)
		for j, n := range plain {
			tainted[j] = benchNode(n.Name, taint)
			cache.SetNode(tainted[j])
		}
		deleted, scheduled := newBenchCounter(intolerant), newBenchCounter(pods)
		bm.deleted.Store(deleted)
		bm.obs.scheduled.Store(scheduled)
		before := benchHeap()
		b.StartTimer()

		start := time.Now()
		for j := range tainted {
			bm.m.NodeUpdated(plain[j], tainted[j])
		}
		benchWait(b, deleted, "deletes")
		benchWait(b, scheduled, "schedules")
		elapsed += time.Since(start)

		b.StopTimer()
		if n := bm.m.Backlog(); n != 0 {
			b.Fatalf("Backlog() = %d after the outage, want 0", n)
		}
		if n := len(bm.m.Pending()); n != tolerating {
			b.Fatalf("len(Pending()) = %d after the outage, want %d", n, tolerating)
		}
		after := benchHeap()
		grown += float64(int64(after) - int64(before))

		// The informer reports the evicted pods gone: the Manager forgets them. Then only
		// the 75,000 pending evictions are left.
		for _, p := range allPods {
			if &p.Spec.Tolerations[0] == &benchIntolerant[0] {
				cache.DeletePod(p.Namespace, p.Name)
				bm.m.PodUpdated(p, nil)
			}
		}
		benchDrain(b, bm.m)
		benchIdle(b, bm.m) // and what the removals left to compact is compacted
		settled += float64(int64(benchHeap()) - int64(before))
		runtime.KeepAlive(bm.m)
		bm.stop()
		for _, p := range allPods {
			cache.SetPod(p)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/outage")
	b.ReportMetric(grown/float64(b.N)/tolerating, "B/pending")
	b.ReportMetric(grown/float64(b.N)/pods, "B/pod")
	b.ReportMetric(settled/float64(b.N)/tolerating, "B/pending-settled")
}

// BenchmarkPodChurn measures steady pod churn on tainted nodes: 1,000 nodes with the
// unreachable taint and 10,000 pods scheduled for eviction in 300 s. Each op adds a pod that
// tolerates the taint for 300 s (it is scheduled) and deletes the oldest one (its eviction
// is cancelled), each through the Cache and PodUpdated as an informer would. The timed
// region ends when the Manager has reported every Scheduled and Cancelled (then Backlog
// must be 0). Pods are taken from a ring of pre-built objects, so allocs/op counts the
// Manager's allocations and the Cache's. The churn is throttled to what the Manager
// sustains: it never runs more than 2,500 ops ahead of the Manager's Scheduled reports.
func BenchmarkPodChurn(b *testing.B) {
	const (
		nodes      = 1000
		population = 10 * nodes
		ring       = 2 * population
		maxLag     = population / 4
	)
	cache := &evictiontest.Cache{}
	taint := benchTaint(time.Now())
	nodeObjs := make([]*v1.Node, nodes)
	for i := range nodeObjs {
		nodeObjs[i] = benchNode(fmt.Sprintf("node-%04d", i), taint)
		cache.SetNode(nodeObjs[i])
	}
	podObjs := make([]*v1.Pod, ring)
	for i := range podObjs {
		podObjs[i] = benchPod("churn", fmt.Sprintf("pod-%05d", i), nodeObjs[i%nodes].Name, benchTolerating)
	}
	for _, p := range podObjs[:population] {
		cache.SetPod(p)
	}
	bm := startBenchManager(b, cache, eviction.Options{})
	defer bm.stop()
	initial := newBenchCounter(population)
	bm.obs.scheduled.Store(initial)
	for _, n := range nodeObjs {
		bm.m.NodeUpdated(nil, n)
	}
	benchWait(b, initial, "initial schedules")

	scheduled, cancelled := newBenchCounter(int64(b.N)), newBenchCounter(int64(b.N))
	bm.obs.scheduled.Store(scheduled)
	bm.obs.cancelled.Store(cancelled)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%256 == 0 && int64(i)-scheduled.n.Load() > maxLag {
			// Keep the Manager's lag behind the churn well under the ring's length, so
			// that an add of a recycled pod never meets its own delete in the queue.
			scheduled.waitFor(b, int64(i-maxLag/2), "schedules")
		}
		add, del := podObjs[(i+population)%ring], podObjs[i%ring]
		cache.SetPod(add)
		bm.m.PodUpdated(nil, add)
		cache.DeletePod(del.Namespace, del.Name)
		bm.m.PodUpdated(del, nil)
	}
	benchWait(b, scheduled, "schedules")
	benchWait(b, cancelled, "cancels")
	b.StopTimer()
	if n := bm.m.Backlog(); n != 0 {
		b.Fatalf("Backlog() = %d at the end, want 0", n)
	}
	pending := len(bm.m.Pending())
	if pending != population {
		b.Fatalf("len(Pending()) = %d at the end, want %d", pending, population)
	}
	b.ReportMetric(float64(pending), "pending")
}

// BenchmarkNodeRetaint measures one node update that moves the deadline of every pod of the
// node: a node with 1,000 pods that tolerate its taint for 300 s, whose taint's TimeAdded
// moves by a second at each op (as when the taint is removed and added again). Each op
// ends when all 1,000 pods have been rescheduled. Reports ns/pod as well.
func BenchmarkNodeRetaint(b *testing.B) {
	const podsOnNode = 1000
	cache := &evictiontest.Cache{}
	start := time.Now()
	node := benchNode("node-0", benchTaint(start))
	cache.SetNode(node)
	for i := range podsOnNode {
		cache.SetPod(benchPod("retaint", fmt.Sprintf("pod-%04d", i), node.Name, benchTolerating))
	}
	// Two versions of the node, a second apart, to alternate between.
	versions := [2]*v1.Node{node, benchNode(node.Name, benchTaint(start.Add(time.Second)))}
	bm := startBenchManager(b, cache, eviction.Options{})
	defer bm.stop()
	c := newBenchCounter(podsOnNode)
	bm.obs.scheduled.Store(c)
	bm.m.NodeUpdated(nil, node)
	benchWait(b, c, "initial schedules")

	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		old, cur := versions[i%2], versions[(i+1)%2]
		c := newBenchCounter(podsOnNode)
		bm.obs.scheduled.Store(c)
		cache.SetNode(cur)
		bm.m.NodeUpdated(old, cur)
		benchWait(b, c, "reschedules")
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/podsOnNode, "ns/pod")
	if n := len(bm.m.Pending()); n != podsOnNode {
		b.Fatalf("len(Pending()) = %d, want %d", n, podsOnNode)
	}
}
