package eviction_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// controller is a tiny taint eviction controller built on a Manager. An in-memory cache
// plays the informers; the handlers update it first and then tell the Manager, as informer
// event handlers would; and the controller itself is the Deleter.
type controller struct {
	*eviction.Manager
	cache *evictiontest.Cache
	clock clock.Clock
}

func newController(clk clock.Clock) *controller {
	c := &controller{cache: &evictiontest.Cache{}, clock: clk}
	m, err := eviction.New(c, c.cache, eviction.Options{Clock: clk})
	if err != nil {
		panic(err)
	}
	c.Manager = m
	return c
}

// onNode is the node informer's add and update handler.
func (c *controller) onNode(node *v1.Node) {
	old, _ := c.cache.Node(node.Name)
	c.cache.SetNode(node)
	c.NodeUpdated(old, node)
}

// onPod is the pod informer's add and update handler.
func (c *controller) onPod(pod *v1.Pod) {
	old, _ := c.cache.Pod(pod.Namespace, pod.Name)
	c.cache.SetPod(pod)
	c.PodUpdated(old, pod)
}

// Delete deletes the pod. A real one would call the API server with pod.UID as a
// precondition; here the pod is removed from the cache, and the Manager told, as the
// informer would once the API server has deleted it.
func (c *controller) Delete(_ context.Context, pod eviction.PodRef) error {
	fmt.Println(c.clock.Now().Format(time.TimeOnly), "deleting", pod)
	if old := c.cache.DeletePod(pod.Namespace, pod.Name); old != nil {
		c.PodUpdated(old, nil)
	}
	return nil
}

func ExampleManager() {
	start := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	clk := testclock.NewFakeClock(start)
	c := newController(clk)
	now := func() string { return clk.Now().Format(time.TimeOnly) }

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()

	pod := func(name string, tolerations ...v1.Toleration) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name + "-uid")},
			Spec:       v1.PodSpec{NodeName: "node-1", Tolerations: tolerations},
		}
	}
	fiveMinutes := int64(300)
	maintenance := v1.Taint{Key: "maintenance", Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: start}}

	c.onNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	c.onPod(pod("batch"))
	c.onPod(pod("db", v1.Toleration{Key: "maintenance", Operator: v1.TolerationOpExists}))

	fmt.Println(now(), "tainting node-1 with maintenance:NoExecute")
	c.onNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: v1.NodeSpec{Taints: []v1.Taint{maintenance}}})
	_ = c.WaitIdle(ctx) // batch tolerates nothing: deleted at once; db tolerates it forever

	fmt.Println(now(), "web arrives, tolerating maintenance for 5m")
	c.onPod(pod("web", v1.Toleration{Key: "maintenance", Operator: v1.TolerationOpExists, TolerationSeconds: &fiveMinutes}))
	_ = c.WaitIdle(ctx)
	for _, p := range c.Pending() {
		fmt.Println(now(), "pending:", p.Target, "at", p.At.Format(time.TimeOnly))
	}
	clk.Step(5 * time.Minute)
	_ = c.WaitIdle(ctx)

	left, _ := c.cache.PodsOnNode("node-1")
	var names []string
	for _, p := range left {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	fmt.Println(now(), "left on node-1:", names)

	cancel()
	fmt.Println("stopped:", <-stopped)
	// Output:
	// 10:00:00 tainting node-1 with maintenance:NoExecute
	// 10:00:00 deleting default/batch
	// 10:00:00 web arrives, tolerating maintenance for 5m
	// 10:00:00 pending: default/web at 10:05:00
	// 10:05:00 deleting default/web
	// 10:05:00 left on node-1: [db]
	// stopped: context canceled
}
