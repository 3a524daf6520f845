package eviction_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// A Manager wired as a controller wires it: a Cache over the informers' stores, handlers
// that update the store and then tell the Manager, and a Deleter. Here an in-memory cache
// plays the informers, and the Deleter removes the pod from it.
func ExampleNew() {
	cache := &evictiontest.Cache{}
	var m *eviction.Manager
	deleter := eviction.DeleterFunc(func(_ context.Context, pod eviction.PodRef) error {
		fmt.Println("delete", pod, "from", pod.Holder, "if its UID is", pod.UID)
		if old := cache.DeletePod(pod.Namespace, pod.Name); old != nil {
			m.PodUpdated(old, nil) // the pod informer's delete handler
		}
		return nil
	})
	m, err := eviction.New(deleter, cache, eviction.Options{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()

	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	cache.SetNode(node)
	m.NodeUpdated(nil, node)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "7f1c"}, Spec: v1.PodSpec{NodeName: "node-1"}}
	cache.SetPod(pod)
	m.PodUpdated(nil, pod)

	tainted := node.DeepCopy()
	tainted.Spec.Taints = []v1.Taint{{Key: "example.com/broken", Effect: v1.TaintEffectNoExecute}}
	cache.SetNode(tainted)
	m.NodeUpdated(node, tainted) // web tolerates nothing: due at once

	_ = m.WaitIdle(ctx)
	cancel()
	fmt.Println("stopped:", <-done)

	_, err = eviction.New(deleter, cache, eviction.Options{Brake: eviction.Brake{Fraction: 2}})
	fmt.Println(err)
	// Output:
	// delete shop/web from node-1 if its UID is 7f1c
	// stopped: context canceled
	// eviction: engine: Brake.Fraction must be 0 (off) or in (0, 1]: got 2
}

// Which pods a NoExecute taint evicts, and when: one that tolerates nothing at once, one
// that tolerates the taint for a time when that time is up, one that tolerates it forever
// never. The cluster (the examples' in-memory cluster on a fake clock) prints the pods the
// Manager deletes.
func ExampleManager() {
	c := newCluster(eviction.Options{})
	c.setNode("node-1")
	c.addPod("batch", "node-1")
	c.addPod("db", "node-1", tolerate("maintenance"))
	c.addPod("web", "node-1", tolerate("maintenance", 300))

	c.say("taint node-1 maintenance:NoExecute")
	c.setNode("node-1", c.taint("maintenance"))
	c.wait()
	c.pending()

	c.clock.Step(5 * time.Minute)
	c.wait()
	c.pending()
	fmt.Println("stopped:", c.stop())
	// Output:
	// 12:00:00.0  taint node-1 maintenance:NoExecute
	// 12:00:00.0  deleted batch
	// 12:00:00.0  pending: [web at 12:05:00]
	// 12:05:00.0  deleted web
	// 12:05:00.0  pending: []
	// stopped: context canceled
}
