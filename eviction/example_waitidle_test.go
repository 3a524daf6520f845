package eviction_test

import (
	"context"
	"fmt"
	"time"

	"github.com/taintevict/taintevict/eviction"
)

// A test of code that uses a Manager, on a fake clock: feed updates, wait, step the clock,
// wait, check. WaitIdle replaces sleeps and polling: when it returns, every eviction due by
// the clock's time has been done, and every update handed to the Manager has been applied.
func ExampleManager_WaitIdle() {
	c := newCluster(eviction.Options{})
	defer c.stop()
	c.setNode("node-1")
	c.addPod("api", "node-1", tolerate("node.kubernetes.io/unreachable", 60))

	c.setNode("node-1", c.taint("node.kubernetes.io/unreachable"))
	c.clock.Step(59 * time.Second)
	if err := c.m.WaitIdle(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println("after 59 s, pending:", len(c.m.Pending()))

	c.clock.Step(time.Second)
	_ = c.m.WaitIdle(context.Background())
	fmt.Println("after 60 s, pending:", len(c.m.Pending()))
	c.wait() // prints what was deleted
	// Output:
	// after 59 s, pending: 1
	// after 60 s, pending: 0
	// 12:01:00.0  deleted api
}
