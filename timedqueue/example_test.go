package timedqueue_test

import (
	"context"
	"fmt"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/timedqueue"
)

// Evictions of three pods are scheduled and one is cancelled; the others run in deadline
// order. A fake clock stands in for time.
func ExampleQueue() {
	clk := testclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	evicted := make(chan string)
	q, err := timedqueue.New(func(ctx context.Context, pod string, node string) {
		evicted <- fmt.Sprintf("evict %s from %s", pod, node)
	}, timedqueue.Options{Clock: clk, Workers: 1})
	if err != nil {
		panic(err)
	}

	start := clk.Now()
	q.Schedule("default/web-1", "node-a", start.Add(30*time.Second))
	q.Schedule("default/web-2", "node-a", start.Add(10*time.Second))
	q.Schedule("default/db-0", "node-a", start.Add(20*time.Second))
	fmt.Println("cancelled db-0:", q.Cancel("default/db-0"))
	fmt.Println("pending:", q.Len())

	clk.Step(time.Minute) // both remaining deadlines pass
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- q.Run(ctx) }()
	fmt.Println(<-evicted)
	fmt.Println(<-evicted)
	stop()
	fmt.Println("Run:", <-done)
	fmt.Println("pending:", q.Len())
	// Output:
	// cancelled db-0: true
	// pending: 2
	// evict default/web-2 from node-a
	// evict default/web-1 from node-a
	// Run: context canceled
	// pending: 0
}

// Scheduling a key again moves its deadline, earlier or later; scheduling it for the time it
// already has only replaces its value.
func ExampleQueue_Schedule() {
	noop := func(context.Context, string, int) {}
	q, err := timedqueue.New(noop, timedqueue.Options{})
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	show := func() {
		v, at, ok := q.Get("default/web-1")
		fmt.Println(v, at.Sub(t0), ok)
	}

	fmt.Println(q.Schedule("default/web-1", 1, t0.Add(5*time.Minute)))
	show()
	fmt.Println(q.Schedule("default/web-1", 2, t0.Add(time.Minute))) // earlier
	show()
	fmt.Println(q.Schedule("default/web-1", 3, t0.Add(time.Minute))) // same time: value only
	show()
	fmt.Println(q.Schedule("default/web-1", 4, t0.Add(time.Hour))) // later
	show()
	fmt.Println(q.Cancel("default/web-1"), q.Len())
	// Output:
	// true
	// 1 5m0s true
	// true
	// 2 1m0s true
	// false
	// 3 1m0s true
	// true
	// 4 1h0m0s true
	// true 0
}

// Pending lists the work waiting to run, by deadline.
func ExampleQueue_Pending() {
	noop := func(context.Context, string, string) {}
	q, err := timedqueue.New(noop, timedqueue.Options{})
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	q.Schedule("default/web-1", "node-a", t0.Add(3*time.Minute))
	q.Schedule("default/web-2", "node-b", t0.Add(time.Minute))
	q.Schedule("default/web-3", "node-a", t0.Add(2*time.Minute))
	for _, e := range q.Pending() {
		fmt.Println(e.At.Sub(t0), e.Key, e.Value)
	}
	// Output:
	// 1m0s default/web-2 node-b
	// 2m0s default/web-3 node-a
	// 3m0s default/web-1 node-a
}

// A test drives a queue with a fake clock: it steps the clock, waits until the queue is
// idle, and looks at what ran. Exactly the work that each step made due has run.
func ExampleQueue_WaitIdle() {
	clk := testclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	var ran []string // only the one worker appends, and WaitIdle orders it before the reads
	q, err := timedqueue.New(func(ctx context.Context, pod string, node string) {
		ran = append(ran, pod)
	}, timedqueue.Options{Clock: clk, Workers: 1})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- q.Run(ctx) }()

	start := clk.Now()
	q.Schedule("default/web-1", "node-a", start)
	q.Schedule("default/web-2", "node-a", start.Add(10*time.Second))
	q.Schedule("default/web-3", "node-a", start.Add(20*time.Second))
	for _, step := range []time.Duration{0, 10 * time.Second, 5 * time.Second, 5 * time.Second} {
		clk.Step(step)
		if err := q.WaitIdle(ctx); err != nil {
			panic(err)
		}
		fmt.Printf("at +%v: ran %v, %d pending\n", clk.Since(start), ran, q.Len())
	}
	stop()
	<-done
	// Output:
	// at +0s: ran [default/web-1], 2 pending
	// at +10s: ran [default/web-1 default/web-2], 1 pending
	// at +15s: ran [default/web-1 default/web-2], 1 pending
	// at +20s: ran [default/web-1 default/web-2 default/web-3], 0 pending
}

// The queue does not retry: work that fails schedules its key again, here a second later,
// up to three tries. The new work runs once the call that scheduled it has returned.
func ExampleQueue_retry() {
	clk := testclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clk.Now()
	var q *timedqueue.Queue[string, int]
	q, err := timedqueue.New(func(ctx context.Context, pod string, try int) {
		fmt.Printf("+%v: evict %s, try %d\n", clk.Since(start), pod, try)
		if try < 3 { // the call failed: try again in a second
			q.Schedule(pod, try+1, clk.Now().Add(time.Second))
		}
	}, timedqueue.Options{Clock: clk, Workers: 1})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- q.Run(ctx) }()

	q.Schedule("default/web-1", 1, start)
	for range 3 {
		if err := q.WaitIdle(ctx); err != nil {
			panic(err)
		}
		clk.Step(time.Second)
	}
	if err := q.WaitIdle(ctx); err != nil {
		panic(err)
	}
	fmt.Println("pending:", q.Len())
	stop()
	<-done
	// Output:
	// +0s: evict default/web-1, try 1
	// +1s: evict default/web-1, try 2
	// +2s: evict default/web-1, try 3
	// pending: 0
}
