package eviction_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// Evict at most 5 pods per second, and stop if more than half the nodes are unreachable.
// The cluster runs on a fake clock; WaitIdle tells when the Manager has done what is due.
func ExampleOptions_budgets() {
	const unreachable = "node.kubernetes.io/unreachable"
	clk := testclock.NewFakeClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	cache := &evictiontest.Cache{}
	var (
		m       *eviction.Manager
		mu      sync.Mutex
		evicted []string
	)
	deleter := eviction.DeleterFunc(func(_ context.Context, pod eviction.PodRef) error {
		mu.Lock()
		evicted = append(evicted, pod.Name)
		mu.Unlock()
		if old := cache.DeletePod(pod.Namespace, pod.Name); old != nil {
			m.PodUpdated(old, nil) // as the informer would report it
		}
		return nil
	})
	m, err := eviction.New(deleter, cache, eviction.Options{
		Clock:     clk,
		RateLimit: eviction.Limit{PerSecond: 5, Burst: 5},
		Brake:     eviction.Brake{Fraction: 0.5},
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	setNode := func(name string, taints ...v1.Taint) {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: taints}}
		old, _ := cache.Node(name)
		cache.SetNode(n)
		m.NodeUpdated(old, n)
	}
	addPod := func(name, node string, tolerations ...v1.Toleration) {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: k8stypes.UID("uid-" + name)}}
		p.Spec.NodeName, p.Spec.Tolerations = node, tolerations
		cache.SetPod(p)
		m.PodUpdated(nil, p)
	}
	// wait waits until the Manager has done what is due, then prints what it evicted.
	wait := func() {
		if err := m.WaitIdle(ctx); err != nil {
			panic(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(evicted) > 0 {
			fmt.Printf("%s  evicted %d\n", clk.Now().Format("15:04:05.0"), len(evicted))
			evicted = nil
		}
	}
	say := func(s string) { fmt.Printf("%s  %s\n", clk.Now().Format("15:04:05.0"), s) }
	down := v1.Taint{Key: unreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: clk.Now()}}
	sixty := int64(60)
	tolerate60s := v1.Toleration{Key: unreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &sixty}

	for i := 1; i <= 5; i++ {
		setNode(fmt.Sprintf("node-%d", i))
	}
	for i := range 10 {
		addPod(fmt.Sprintf("web-%d", i), "node-1") // tolerates nothing
	}
	for i := 2; i <= 4; i++ {
		addPod(fmt.Sprintf("db-%d", i), fmt.Sprintf("node-%d", i), tolerate60s)
	}
	wait()

	say("node-1 unreachable, 1 of 5 nodes: its 10 pods are due now")
	setNode("node-1", down)
	wait()
	for range 10 {
		clk.Step(100 * time.Millisecond)
		wait()
	}

	clk.Step(time.Minute)
	down.TimeAdded = &metav1.Time{Time: clk.Now()}
	say("node-2, node-3 and node-4 unreachable, 4 of 5 nodes: the brake holds their pods")
	for i := 2; i <= 4; i++ {
		setNode(fmt.Sprintf("node-%d", i), down)
	}
	wait()
	clk.Step(time.Minute)
	wait()
	var waiting []string
	for _, p := range m.Pending() {
		waiting = append(waiting, fmt.Sprintf("%s (%s since %s)", p.Target.Name, p.Delayed, p.At.Format("15:04:05")))
	}
	slices.Sort(waiting) // due at the same time: in no particular order
	say("pending: " + strings.Join(waiting, ", "))

	say("node-3 and node-4 are back, 2 of 5 nodes: the brake releases db-2")
	setNode("node-3")
	wait()
	setNode("node-4")
	wait()
	say(fmt.Sprintf("pending: %d", len(m.Pending())))

	// Output:
	// 12:00:00.0  node-1 unreachable, 1 of 5 nodes: its 10 pods are due now
	// 12:00:00.0  evicted 5
	// 12:00:00.2  evicted 1
	// 12:00:00.4  evicted 1
	// 12:00:00.6  evicted 1
	// 12:00:00.8  evicted 1
	// 12:00:01.0  evicted 1
	// 12:01:01.0  node-2, node-3 and node-4 unreachable, 4 of 5 nodes: the brake holds their pods
	// 12:02:01.0  pending: db-2 (Paused since 12:02:01), db-3 (Paused since 12:02:01), db-4 (Paused since 12:02:01)
	// 12:02:01.0  node-3 and node-4 are back, 2 of 5 nodes: the brake releases db-2
	// 12:02:01.0  evicted 1
	// 12:02:01.0  pending: 0
}
