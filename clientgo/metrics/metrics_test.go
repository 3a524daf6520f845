package metrics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/internal/fixtures"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var (
	podOn       = fixtures.PodOn
	taintedNode = fixtures.TaintedNode
	tolerating  = fixtures.Tolerating
)

// node is what a clientgo.Controller tells its Meter, without the counts.
func nodeSide(clk clock.PassiveClock) clientgo.Instrumented {
	return clientgo.Instrumented{Controller: "node", Kube: clientgo.NodeKubeMetrics, Clock: clk}
}

// TestMetrics feeds a Metrics the decisions of several evictions on a fake clock and
// checks every series it keeps.
func TestMetrics(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(testNow)
	reg := prometheus.NewPedanticRegistry()
	stats := eviction.Stats{Scheduled: 1, Retrying: 1, Delayed: map[eviction.Reason]int{eviction.ReasonPaused: 2, eviction.ReasonRateLimited: 1}}
	in := nodeSide(clk)
	in.Stats = func() eviction.Stats { return stats }
	m, err := New(reg, in)
	if err != nil {
		t.Fatal(err)
	}
	ref := func(name string) eviction.PodRef {
		return eviction.PodRef{Namespace: "ns", Name: name, UID: types.UID("u-" + name), Holder: "n"}
	}

	// a: due at now, started 2 s late, failed once on a timeout, evicted 10 s after its
	// deadline through the Eviction API.
	m.Scheduled(ref("a"), testNow)
	m.Delayed(ref("a"), eviction.ReasonRateLimited)
	m.Delayed(ref("a"), eviction.ReasonPaused)
	m.Delayed(ref("a"), eviction.ReasonRateLimited)
	clk.SetTime(testNow.Add(2 * time.Second))
	m.Started(ref("a"), eviction.Attempt{Call: 1, Due: testNow})
	m.Failed(ref("a"), eviction.Attempt{Call: 1}, fmt.Errorf("eviction: delete: %w", context.DeadlineExceeded))
	clk.SetTime(testNow.Add(10 * time.Second))
	m.Started(ref("a"), eviction.Attempt{Call: 2, Due: testNow}) // not a second lateness observation
	m.Removed(ref("a"), clientgo.MethodEvict, false)
	m.Succeeded(ref("a"), eviction.Attempt{Call: 2, Due: testNow}, false)
	// b: found gone; c: a Deleter that tells nothing, due 5 s before a; d: dry run;
	// e: skipped; f: cancelled.
	for _, p := range []string{"b", "c", "d", "e", "f"} {
		m.Scheduled(ref(p), testNow)
	}
	m.Started(ref("b"), eviction.Attempt{Call: 1, Due: testNow})
	m.Removed(ref("b"), clientgo.MethodDelete, true)
	m.Succeeded(ref("b"), eviction.Attempt{Call: 1, Due: testNow}, false)
	m.Started(ref("c"), eviction.Attempt{Call: 1, Due: testNow.Add(-5 * time.Second)})
	m.Succeeded(ref("c"), eviction.Attempt{Call: 1, Due: testNow.Add(-5 * time.Second)}, false)
	m.Succeeded(ref("d"), eviction.Attempt{Call: 1, Due: testNow}, true)
	m.Skipped(ref("e"), eviction.ReasonPodTerminating)
	m.Cancelled(ref("f"), eviction.ReasonPodDeleted)
	m.Failed(ref("g"), eviction.Attempt{Call: 1}, apierrors.NewTooManyRequests("pdb", 1))
	m.Failed(ref("g"), eviction.Attempt{Call: 2}, &eviction.PanicError{Value: "boom"})
	m.Removed(ref("g"), clientgo.MethodDelete, false) // then fails: not kept
	m.Failed(ref("g"), eviction.Attempt{Call: 3}, errors.New("what"))

	if len(m.removed) != 0 {
		t.Errorf("nothing kept once the attempts ended: got %v, want none", m.removed)
	}
	want := `
# HELP taintevict_evictions_total Evictions by outcome: succeeded, gone, failed (one per failed attempt), skipped and cancelled, with the method or reason.
# TYPE taintevict_evictions_total counter
taintevict_evictions_total{controller="node",outcome="cancelled",reason="TargetDeleted"} 1
taintevict_evictions_total{controller="node",outcome="failed",reason="Other"} 1
taintevict_evictions_total{controller="node",outcome="failed",reason="Panic"} 1
taintevict_evictions_total{controller="node",outcome="failed",reason="Timeout"} 1
taintevict_evictions_total{controller="node",outcome="failed",reason="TooManyRequests"} 1
taintevict_evictions_total{controller="node",outcome="gone",reason="delete"} 1
taintevict_evictions_total{controller="node",outcome="skipped",reason="PodTerminating"} 1
taintevict_evictions_total{controller="node",outcome="succeeded",reason="dry-run"} 1
taintevict_evictions_total{controller="node",outcome="succeeded",reason="evict"} 1
taintevict_evictions_total{controller="node",outcome="succeeded",reason="unknown"} 1
# HELP taintevict_evictions_delayed_total Evictions that were due and waited, by reason: RateLimited (a rate limit) or Paused (the brake, or a budget); counted when the reason changes.
# TYPE taintevict_evictions_delayed_total counter
taintevict_evictions_delayed_total{controller="node",reason="Paused"} 1
taintevict_evictions_delayed_total{controller="node",reason="RateLimited"} 2
# HELP taintevict_pending_evictions Evictions scheduled and not running: due later, due and waiting for a worker, a retry, a rate limit or a budget.
# TYPE taintevict_pending_evictions gauge
taintevict_pending_evictions{controller="node"} 5
# HELP taintevict_delayed_evictions Pending evictions that are due and wait for a rate limit (RateLimited) or the brake or a budget (Paused), by reason.
# TYPE taintevict_delayed_evictions gauge
taintevict_delayed_evictions{controller="node",reason="Paused"} 2
taintevict_delayed_evictions{controller="node",reason="RateLimited"} 1
# HELP taint_eviction_controller_pod_deletions_total [ALPHA] Total number of Pods deleted by TaintEvictionController since its start.
# TYPE taint_eviction_controller_pod_deletions_total counter
taint_eviction_controller_pod_deletions_total 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"taintevict_evictions_total", "taintevict_evictions_delayed_total", "taintevict_pending_evictions",
		"taintevict_delayed_evictions", "taint_eviction_controller_pod_deletions_total"); err != nil {
		t.Fatal(err)
	}

	// Durations, in seconds: a's 10 s and c's 15 s.
	n, sum := histogram(t, m.duration)
	if got, want := n, uint64(2); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, want := float64(sum), float64(10+15); math.Abs(got-want) > 1e-9 {
		t.Errorf("got %v, want %v", got, want)
	}
	// Lateness: a's first attempt 2 s late; b 10 s, c 15 s.
	n, sum = histogram(t, m.lateness)
	if got, want := n, uint64(3); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, want := float64(sum), float64(2+10+15); math.Abs(got-want) > 1e-9 {
		t.Errorf("got %v, want %v", got, want)
	}
}

// histogram returns the count and sum of h's observations.
func histogram(t *testing.T, h prometheus.Histogram) (uint64, float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(h); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 {
		t.Fatalf("got %d (%v), want %d", len(mfs), mfs, 1)
	}
	hist := mfs[0].GetMetric()[0].GetHistogram()
	return hist.GetSampleCount(), hist.GetSampleSum()
}

// TestMetricsCancelledWhileDeleting runs a Manager that cancels an eviction while its
// Deleter call runs, a call that then fails. The Manager reports Cancelled for it, not
// Failed; Metrics counts it so, and keeps nothing of it.
func TestMetricsCancelledWhileDeleting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m, err := New(reg, nodeSide(nil))
		if err != nil {
			t.Fatal(err)
		}
		tainted, pod := taintedNode("node-1", time.Now()), podOn("shop", "web-1", "node-1")
		c := &evictiontest.Cache{}
		c.SetNode(tainted)
		c.SetPod(pod)
		release := make(chan struct{})
		d := &evictiontest.Deleter{Func: func(context.Context, eviction.PodRef) error {
			<-release
			return apierrors.NewServiceUnavailable("try later")
		}}
		mgr, err := eviction.New(d, c, eviction.Options{Observer: m})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- mgr.Run(ctx) }()

		mgr.NodeUpdated(nil, tainted)
		mgr.PodUpdated(nil, pod)
		synctest.Wait() // the Deleter call runs, and waits
		if got, want := d.Count(), 1; !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		untainted := tainted.DeepCopy()
		untainted.Spec.Taints = nil
		c.SetNode(untainted)
		mgr.NodeUpdated(tainted, untainted)
		synctest.Wait() // the eviction is cancelled while its call runs
		close(release)
		if err := mgr.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}

		m.mu.Lock()
		left := len(m.removed)
		m.mu.Unlock()
		if left != 0 {
			t.Errorf("entries of the cancelled eviction: got %v, want 0", left)
		}
		got, err := testutil.GatherAndCount(reg, "taintevict_evictions_total")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got, 1; !reflect.DeepEqual(got, want) {
			t.Errorf("series of taintevict_evictions_total: only the cancel: got %v, want %v", got, want)
		}
		if got, want := float64(testutil.ToFloat64(m.outcomes.WithLabelValues(OutcomeCancelled, string(eviction.ReasonNotTainted)))), float64(1); math.Abs(got-want) > 0 {
			t.Errorf("got %v, want %v", got, want)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: got %v, want %v", err, context.Canceled)
		}
	})
}

// TestMetricsFromManager runs a Manager on a fake clock with a rate limit of one eviction a
// second: of the two pods due at 60 s, one goes at once and the other 1 s late, which the
// lateness and kube's duration show, from the deadlines the Manager reports. The 100 pods
// still pending leave nothing in the Metrics.
func TestMetricsFromManager(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(testNow)
		m, err := New(prometheus.NewPedanticRegistry(), nodeSide(clk))
		if err != nil {
			t.Fatal(err)
		}
		c := &evictiontest.Cache{}
		node := taintedNode("node-1", testNow)
		c.SetNode(node)
		minute, hour := int64(60), int64(3600)
		var pods []*v1.Pod
		for _, name := range []string{"a", "b"} {
			pods = append(pods, tolerating(podOn("shop", name, "node-1"), &minute))
		}
		for i := range 100 {
			pods = append(pods, tolerating(podOn("shop", fmt.Sprintf("later-%d", i), "node-1"), &hour))
		}
		for _, p := range pods {
			c.SetPod(p)
		}
		mgr, err := eviction.New(&evictiontest.Deleter{}, c, eviction.Options{
			Clock: clk, Observer: m, RateLimit: eviction.Limit{PerSecond: 1, Burst: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- mgr.Run(ctx) }()
		mgr.NodeUpdated(nil, node)
		for _, p := range pods {
			mgr.PodUpdated(nil, p)
		}
		synctest.Wait()
		if len(mgr.Pending()) != 102 {
			t.Fatalf("got %d (%v), want %d", len(mgr.Pending()), mgr.Pending(), 102)
		}
		if len(m.removed) != 0 {
			t.Errorf("got %v, want none", m.removed)
		}
		clk.Step(time.Minute)
		synctest.Wait()
		clk.Step(time.Second)
		synctest.Wait()

		n, sum := histogram(t, m.lateness)
		if got, want := n, uint64(2); !reflect.DeepEqual(got, want) {
			t.Errorf("lateness observations: got %v, want %v", got, want)
		}
		if got, want := float64(sum), float64(1); math.Abs(got-want) > 1e-9 {
			t.Errorf("lateness: 0 s and 1 s: got %v, want %v", got, want)
		}
		n, sum = histogram(t, m.duration)
		if got, want := n, uint64(2); !reflect.DeepEqual(got, want) {
			t.Errorf("duration observations: got %v, want %v", got, want)
		}
		if got, want := float64(sum), float64(1); math.Abs(got-want) > 1e-9 {
			t.Errorf("duration: 0 s and 1 s: got %v, want %v", got, want)
		}
		if len(mgr.Pending()) != 100 {
			t.Errorf("got %d (%v), want %d", len(mgr.Pending()), mgr.Pending(), 100)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: got %v, want %v", err, context.Canceled)
		}
	})
}

// TestMetricsScrapeCostsTheSameAtAnySize: a scrape of the pending gauges reads the
// Manager's counters, so that it costs the same with 5,000 pending evictions as with 10.
// It used to copy and sort the whole schedule (Manager.Pending), O(n) at every scrape.
func TestMetricsScrapeCostsTheSameAtAnySize(t *testing.T) {
	scrape := func(n int) (bytes uint64, pending float64) {
		var got uint64
		synctest.Test(t, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(testNow)
			c := &evictiontest.Cache{}
			node := taintedNode("node-1", testNow)
			c.SetNode(node)
			hour := int64(3600)
			mgr, err := eviction.New(&evictiontest.Deleter{}, c, eviction.Options{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewPedanticRegistry()
			in := nodeSide(clk)
			in.Stats = mgr.Stats
			if _, err := New(reg, in); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- mgr.Run(ctx) }()
			mgr.NodeUpdated(nil, node)
			for i := range n {
				p := tolerating(podOn("shop", fmt.Sprintf("p-%d", i), "node-1"), &hour)
				c.SetPod(p)
				mgr.PodUpdated(nil, p)
			}
			synctest.Wait()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range 10 {
				if _, err := reg.Gather(); err != nil {
					t.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			got = (after.TotalAlloc - before.TotalAlloc) / 10
			fams, _ := reg.Gather()
			for _, f := range fams {
				if f.GetName() == "taintevict_pending_evictions" {
					pending = f.GetMetric()[0].GetGauge().GetValue()
				}
			}
			cancel()
			<-done
		})
		return got, pending
	}
	small, pSmall := scrape(10)
	large, pLarge := scrape(5000)
	if pSmall != 10 || pLarge != 5000 {
		t.Fatalf("taintevict_pending_evictions: got %v and %v, want 10 and 5000", pSmall, pLarge)
	}
	if large > 2*small+16<<10 {
		t.Errorf("a scrape allocates %d bytes with 5,000 pending evictions and %d with 10: want the same cost", large, small)
	}
}

// TestMetricsShareARegistry: the node side, the device side and a third instantiation
// (kube has no metrics for it) keep their Metrics on one registry. Each of kube's
// controllers has its two metrics under its own names; taintevict's carry the controller
// label; the third has only taintevict's. A second Metrics of the same controller is
// refused.
func TestMetricsShareARegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	device := clientgo.KubeMetrics{Subsystem: "device_taint_eviction_controller", DeletionsHelp: "d", DurationHelp: "dd"}
	sides := map[string]*Metrics{}
	for _, in := range []clientgo.Instrumented{
		nodeSide(nil),
		{Controller: "device", Kube: device},
		{Controller: "clusters"},
	} {
		m, err := New(reg, in)
		if err != nil {
			t.Fatalf("%s: %v", in.Controller, err)
		}
		sides[in.Controller] = m
	}
	if _, err := New(reg, clientgo.Instrumented{Controller: "clusters"}); err == nil {
		t.Error("a second Metrics of the controller clusters on one registry: got no error, want one")
	}
	for name, m := range sides {
		pod := eviction.PodRef{Namespace: "ns", Name: name, UID: types.UID(name), Holder: "h"}
		m.Removed(pod, clientgo.MethodDelete, false)
		m.Succeeded(pod, eviction.Attempt{Call: 1, Due: testNow}, false)
	}
	want := `
# HELP taint_eviction_controller_pod_deletions_total [ALPHA] Total number of Pods deleted by TaintEvictionController since its start.
# TYPE taint_eviction_controller_pod_deletions_total counter
taint_eviction_controller_pod_deletions_total 1
# HELP device_taint_eviction_controller_pod_deletions_total d
# TYPE device_taint_eviction_controller_pod_deletions_total counter
device_taint_eviction_controller_pod_deletions_total 1
# HELP taintevict_evictions_total Evictions by outcome: succeeded, gone, failed (one per failed attempt), skipped and cancelled, with the method or reason.
# TYPE taintevict_evictions_total counter
taintevict_evictions_total{controller="clusters",outcome="succeeded",reason="delete"} 1
taintevict_evictions_total{controller="device",outcome="succeeded",reason="delete"} 1
taintevict_evictions_total{controller="node",outcome="succeeded",reason="delete"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"taint_eviction_controller_pod_deletions_total", "device_taint_eviction_controller_pod_deletions_total", "taintevict_evictions_total"); err != nil {
		t.Error(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var kube []string
	for _, f := range fams {
		if strings.HasSuffix(f.GetName(), "_pod_deletion_duration_seconds") || strings.HasSuffix(f.GetName(), "_pod_deletions_total") {
			kube = append(kube, f.GetName())
		}
	}
	if got, want := len(kube), 4; got != want {
		t.Errorf("kube's metrics on the registry: got %q, want the node and the device side's two each", kube)
	}
}
