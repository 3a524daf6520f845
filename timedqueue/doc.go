// Package timedqueue is a generic, cancellable timed worker queue: it runs work for a key at
// the time the key is scheduled for, on a bounded pool of workers, and lets work be moved or
// cancelled at any time.
//
//	var q *timedqueue.Queue[string, string]
//	q, err := timedqueue.New(func(ctx context.Context, pod string, node string) {
//		if err := evict(ctx, pod, node); err != nil {
//			q.Schedule(pod, node, clk.Now().Add(time.Second)) // try again in a second
//		}
//	}, timedqueue.Options{Clock: clk, Workers: 8})
//	...
//	go q.Run(ctx)                                // until ctx is done
//	q.Schedule("shop/web-1", "node-1", deadline) // moves or replaces earlier work for the key
//	q.Cancel("shop/web-1")                       // the pod tolerates the taint after all
//
// It suits controllers that keep a deadline per object, such as the eviction of pods from
// tainted nodes, by the million: pending work has no goroutine and no timer of its own,
// and one timer, set for the earliest deadline, wakes the workers. The clock is injected,
// so tests drive it with a fake clock. The package knows nothing of Kubernetes.
//
// Inside, a queue is one lock, a Go map from each key's hash to the key's entry, and a
// 4-ary min-heap of the entries with pending work.
//
// # Lifecycle
//
// Create a queue with [New], call [Queue.Run] in a goroutine of its own, and stop it by
// cancelling Run's context: Run then waits for running work to return and for every
// goroutine it started, and returns. Schedule, Cancel, Get, Pending and Len may be called
// before, during and after Run. [Queue.WaitIdle] waits until no due work is left to run,
// which is how a test on a fake clock knows that a step has taken effect.
//
// # Guarantees
//
//   - Due work is taken in deadline order, work due at the same time in the order it was
//     scheduled: with one worker, due work starts in exactly that order; with several,
//     they run it side by side.
//   - A key is never run twice at once. Schedule and Cancel never wait for running work; a
//     Schedule while a key runs makes it run again after the running call returns.
//   - Work that Cancel has removed never starts after Cancel returns.
//   - The queue does not retry and does not recover panics: a work function that fails
//     schedules its key again if it wants another try (see the examples), and one that may
//     panic recovers its own panic.
package timedqueue
