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
// waiting for a worker or running, and that the queue's one timer on its clock is set for
// the earliest deadline still ahead. Work scheduled for later does not hold WaitIdle back;
// on the real clock, work that comes due while it waits does.
//
// A fake clock stepped after WaitIdle returns fires exactly the work the step makes due,
// even when the step before landed while the queue was setting its timer: WaitIdle sets
// the timer itself, from a reading of the clock it takes once idle. So a test steps the
// clock, calls WaitIdle, and then looks at what ran.
//
// Before Run is called, WaitIdle returns nil at once when no work is due, and otherwise
// waits until Run has run it, or for ctx: give it a ctx that ends if Run may never come.
// Once Run's ctx is done, WaitIdle waits for running calls to return, then returns nil
// when no due work is left, and [ErrStopped] when some is.
//
// WaitIdle is safe for concurrent use. It does not keep other goroutines from scheduling
// work meanwhile: it returns at a moment when the queue was idle, which then may not last.
func (q *Queue[K, V]) WaitIdle(ctx context.Context) error {
	q.mu.Lock()
	for {
		now := toNanos(q.clock.Now())
		due := len(q.heap) > 0 && q.heap[0].at <= now
		switch {
		case q.active == 0 && due && q.closed:
			q.mu.Unlock()
			return ErrStopped
		case q.active == 0 && !due:
			q.arm(now, true) // a timer set from a reading taken before a step would be late
			q.mu.Unlock()
			return nil
		case due:
			q.arm(now, false) // wakes a worker, in case the timer was late
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
		q.mu.Lock()
	}
}

// Started returns a channel that is closed once Run has started: from then on, WaitIdle
// returns only when the queue's timer is set for the earliest deadline still ahead.
// A caller that runs the queue in a goroutine of its own waits on it before it relies on
// that, since Run may not have started yet when the goroutine has been launched.
func (q *Queue[K, V]) Started() <-chan struct{} { return q.started }

// changed wakes the WaitIdle calls that wait for the queue's state to change. q.mu must
// be held.
func (q *Queue[K, V]) changed() {
	if q.idle != nil {
		close(q.idle)
		q.idle = nil
	}
}
