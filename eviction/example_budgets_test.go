package eviction_test

import (
	"fmt"
	"time"

	"github.com/taintevict/taintevict/eviction"
)

// Evict at most 5 pods a second, and pause a taint key's evictions while more than half
// the nodes carry it. The cluster (the examples' in-memory cluster on a fake clock) prints
// the pods the Manager deletes.
func ExampleOptions_budgets() {
	const down = "node.kubernetes.io/unreachable"
	c := newCluster(eviction.Options{
		RateLimit: eviction.Limit{PerSecond: 5, Burst: 5},
		Brake:     eviction.Brake{Fraction: 0.5},
	})
	defer c.stop()
	for i := 1; i <= 5; i++ {
		c.setNode(fmt.Sprintf("node-%d", i))
	}
	for i := range 7 {
		c.addPod(fmt.Sprintf("web-%d", i), "node-1")
	}
	c.addPod("db-2", "node-2", tolerate(down, 60))
	c.addPod("db-3", "node-3", tolerate(down, 60))
	c.m.Synced() // every node and pod is known: the brake may count them

	c.say("node-1 down, 1 of 5 nodes: its 7 pods are due, 5 go at once, then 5 a second")
	c.setNode("node-1", c.taint(down))
	c.waitCount()
	c.clock.Step(400 * time.Millisecond)
	c.waitCount()

	c.say("node-2 and node-3 down, 3 of 5 nodes: the brake pauses their pods")
	c.setNode("node-2", c.taint(down))
	c.setNode("node-3", c.taint(down))
	c.clock.Step(time.Minute)
	c.wait()
	c.pending()

	c.say("node-3 back, 2 of 5 nodes: the brake releases db-2")
	c.setNode("node-3")
	c.wait()
	// Output:
	// 12:00:00.0  node-1 down, 1 of 5 nodes: its 7 pods are due, 5 go at once, then 5 a second
	// 12:00:00.0  deleted 5
	// 12:00:00.4  deleted 2
	// 12:00:00.4  node-2 and node-3 down, 3 of 5 nodes: the brake pauses their pods
	// 12:01:00.4  pending: [db-2 at 12:01:00 (Paused), db-3 at 12:01:00 (Paused)]
	// 12:01:00.4  node-3 back, 2 of 5 nodes: the brake releases db-2
	// 12:01:00.4  deleted db-2
}
