package eviction_test

// This file is one whole example: a test of code that uses a Manager, as a user writes it,
// on a fake clock. Manager.WaitIdle replaces sleeps and polling: feed updates, wait, step
// the clock, wait, check.

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// fakeCluster is an in-memory cluster that tells a Manager what changes, as informers do,
// and whose Deleter removes the pod and reports the removal, as the API server would.
type fakeCluster struct {
	clock *testclock.FakeClock
	cache *evictiontest.Cache
	m     *eviction.Manager
}

func (c *fakeCluster) Delete(_ context.Context, pod eviction.PodRef) error {
	fmt.Printf("%s  delete %s from %s\n", c.clock.Now().Format(time.TimeOnly), pod, pod.Holder)
	if old := c.cache.DeletePod(pod.Namespace, pod.Name); old != nil {
		c.m.PodUpdated(old, nil)
	}
	return nil
}

func (c *fakeCluster) setNode(n *v1.Node) {
	old, _ := c.cache.Node(n.Name)
	c.cache.SetNode(n)
	c.m.NodeUpdated(old, n)
}

func (c *fakeCluster) addPod(name, node string, tolerationSeconds ...int64) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: k8stypes.UID("uid-" + name)}}
	p.Spec.NodeName = node
	for _, s := range tolerationSeconds {
		p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{
			Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists,
			Effect: v1.TaintEffectNoExecute, TolerationSeconds: &s,
		})
	}
	c.cache.SetPod(p)
	c.m.PodUpdated(nil, p)
}

func (c *fakeCluster) printPending() {
	for _, p := range c.m.Pending() {
		fmt.Printf("%s  pending %s at %s\n", c.clock.Now().Format(time.TimeOnly), p.Target, p.At.Format(time.TimeOnly))
	}
}

func ExampleManager_WaitIdle() {
	c := &fakeCluster{clock: testclock.NewFakeClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)), cache: &evictiontest.Cache{}}
	m, err := eviction.New(c, c.cache, eviction.Options{Clock: c.clock})
	if err != nil {
		panic(err)
	}
	c.m = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	c.setNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	c.addPod("web", "node-1")     // tolerates nothing
	c.addPod("api", "node-1", 60) // tolerates the taint for 60 s

	// The node becomes unreachable: web goes at once, api in 60 s.
	added := metav1.NewTime(c.clock.Now())
	c.setNode(&v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{
			Key: "node.kubernetes.io/unreachable", Effect: v1.TaintEffectNoExecute, TimeAdded: &added,
		}}},
	})
	if err := m.WaitIdle(ctx); err != nil { // web's eviction has been done when it returns
		panic(err)
	}
	c.printPending()

	c.clock.Step(59 * time.Second)
	_ = m.WaitIdle(ctx) // nothing is due yet
	c.clock.Step(time.Second)
	_ = m.WaitIdle(ctx) // api's eviction has been done
	fmt.Println("pending:", len(m.Pending()))

	// Output:
	// 12:00:00  delete default/web from node-1
	// 12:00:00  pending default/api at 12:01:00
	// 12:01:00  delete default/api from node-1
	// pending: 0
}
