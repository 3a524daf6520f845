// Package timedqueue is a generic, cancellable timed worker queue: it runs work for a key at
// the time the key is scheduled for, on a bounded pool of workers, retries failed work with
// exponential backoff, and lets work be moved or cancelled at any time.
//
//	q, err := timedqueue.New(func(ctx context.Context, pod string, node string) error {
//		return evict(ctx, pod, node) // an error retries after a backoff
//	}, timedqueue.Options{Workers: 8})
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
//     scheduled, and each worker starts what it took in that order: with one worker, due
//     work starts in exactly that order; with several, they run it side by side.
//   - A key is never run twice at once. Schedule and Cancel never wait for running work, and
//     what they do while a key runs is neither lost nor undone when that attempt returns.
//   - A failed attempt (an error or a recovered panic) is retried with [Backoff] until it
//     succeeds, is cancelled or is replaced, or until Backoff.MaxAttempts is reached.
//   - Work that Cancel has removed never starts after Cancel returns.
package timedqueue
