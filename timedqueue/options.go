package timedqueue

import "k8s.io/utils/clock"

// DefaultWorkers is the number of workers of a queue whose [Options] leave Workers 0.
const DefaultWorkers = 8

// Options configures a [Queue]. The zero value gives the real clock, [DefaultWorkers]
// workers, and retries until cancelled with the default [Backoff].
type Options struct {
	// Clock tells the time and makes the one timer the queue uses. nil means the real clock.
	// Tests pass a k8s.io/utils/clock/testing.FakeClock, step it, and call
	// [Queue.WaitIdle] to wait for the work the step made due; a step right after WaitIdle
	// returns fires exactly the work it makes due.
	Clock clock.Clock
	// Workers is how many work functions may run at once. 0 means DefaultWorkers; a
	// negative value is an error.
	Workers int
	// Backoff sets the delay between attempts of failed work.
	Backoff Backoff
}
