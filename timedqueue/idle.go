package timedqueue

import (
	"context"
	"errors"
)

// ErrStopped is returned by [Queue.WaitIdle] when Run has returned and work that is due is
// left, which no worker will run.
var ErrStopped = errors.New("timedqueue: Run has returned and due work is left")

// WaitIdle waits until the queue is idle at the clock's current time, and returns nil; or
// returns ctx's error once ctx is done. Idle means that no work due at that time is pending,
// waiting for a worker or running (retries due by then included), and that the queue's one
// timer on its clock is set for the earliest deadline still ahead. Work scheduled for later
// does not hold WaitIdle back; on the real clock, work that comes due while it waits does.
//
// A fake clock stepped after WaitIdle returns fires exactly the work the step makes due,
// even when the step before landed while the queue was setting its timer. So a test steps
// the clock, calls WaitIdle, and then looks at what ran.
//
// Before Run is called, WaitIdle returns nil at once when no work is due, and otherwise
// waits until Run has run it, or for ctx: give it a ctx that ends if Run may never come.
// Once Run's ctx is done, WaitIdle waits for running attempts to return, then returns nil
// when no due work is left, and [ErrStopped] when some is.
//
// WaitIdle is safe for concurrent use. It does not keep other goroutines from scheduling
// work meanwhile: it returns at a moment when the queue was idle, which then may not last.
func (q *Queue[K, V]) WaitIdle(ctx context.Context) error {
	q.mu.Lock()
	since := q.plans
	q.mu.Unlock()
	// A step that lands while the dispatcher sets its timer from a clock reading taken
	// before the step delays that timer (set for a duration) by the step. So idle means a
	// plan made since this call: the dispatcher has read the clock again, after the call,
	// and set its timer from that reading.
	q.wake() // have the dispatcher make a plan from a clock reading taken from now on
	for {
		q.mu.Lock()
		idle, err := q.idleSince(since)
		if idle || err != nil {
			q.mu.Unlock()
			return err
		}
		if q.idle == nil {
			q.idle = make(chan struct{})
		}
		changed := q.idle
		q.mu.Unlock()

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// Started returns a channel that is closed once Run has started: from then on, WaitIdle
// returns only when the queue's timer is set for the earliest deadline still ahead.
// A caller that runs the queue in a goroutine of its own waits on it before it relies on
// that, since Run may not have started yet when the goroutine has been launched.
func (q *Queue[K, V]) Started() <-chan struct{} { return q.running }

// idleSince reports whether the queue is idle at the clock's current time, with a timer set
// by a plan made after plan number since; or ErrStopped. q.mu must be held.
func (q *Queue[K, V]) idleSince(since uint64) (bool, error) {
	if q.active > 0 {
		return false, nil
	}
	next, ok := q.next()
	now := toNanos(q.clock.Now())
	due := ok && next.at <= now
	switch {
	case q.closed && due:
		return false, ErrStopped
	case !q.started || q.closed || due:
		return !due, nil
	case !ok:
		return true, nil
	}
	// The timer must be set, by a fresh plan, no later than the earliest deadline and not
	// for a time that has passed (the dispatcher would then be about to plan again).
	return q.armedPlan > since && q.armedPlan == q.plans &&
		now < q.armed && q.armed <= next.at, nil
}

// changed wakes the WaitIdle calls that wait for the queue's state to change. q.mu must
// be held.
func (q *Queue[K, V]) changed() {
	if q.idle != nil {
		close(q.idle)
		q.idle = nil
	}
}
