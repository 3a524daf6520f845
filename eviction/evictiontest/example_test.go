package evictiontest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// A test of a Manager with the stand-ins: the test fills the Cache and tells the Manager,
// as informers would, steps a fake clock, and reads what the Deleter and the Observer
// recorded. The pod tolerates its node's taint for five minutes.
func Example() {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	var cache evictiontest.Cache
	deleter, obs := &evictiontest.Deleter{}, &evictiontest.Observer{}
	m, err := eviction.New(deleter, &cache, eviction.Options{Clock: clk, Observer: obs})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- m.Run(ctx) }()
	taint := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute,
		TimeAdded: ptr.To(metav1.NewTime(clk.Now()))}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: v1.NodeSpec{Taints: []v1.Taint{taint}}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: "uid-1"},
		Spec: v1.PodSpec{NodeName: "node-1", Tolerations: []v1.Toleration{{Key: taint.Key,
			Operator: v1.TolerationOpExists, TolerationSeconds: ptr.To[int64](300)}}}}
	cache.SetNode(node)
	cache.SetPod(pod)
	m.NodeUpdated(nil, node)
	m.PodUpdated(nil, pod)
	for _, step := range []time.Duration{0, 5 * time.Minute} {
		clk.Step(step)
		if err := m.WaitIdle(ctx); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d delete calls\n", clk.Now().Format("15:04"), deleter.Count())
	}
	for _, e := range obs.Events() {
		fmt.Println(e)
	}
	cancel()
	<-stopped
	// Output:
	// 00:00: 0 delete calls
	// 00:05: 1 delete calls
	// Scheduled shop/web-1 at 00:05:00
	// Started shop/web-1 (attempt 1)
	// Succeeded shop/web-1 (attempt 1)
}
