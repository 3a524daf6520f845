package timedqueue

import (
	"context"
	"runtime/debug"
	"time"

	"k8s.io/utils/clock"
)

// attempt is what a worker takes out of the lock to call the work function with.
type attempt[K comparable, V any] struct {
	key   K
	value V
	n     uint32        // 1 for the first attempt of a scheduling
	lag   time.Duration // how late it starts: from the time it was due to the claim
}

// Run runs due work until ctx is done. Then it stops starting work, waits for every running
// attempt to return (their ctx, which is ctx, is done too) and returns ctx's error. Work
// still pending stays in the queue, where Len and Get see it. Every goroutine Run starts
// has ended when it returns. A Queue runs once: a second call returns [ErrRunTwice].
func (q *Queue[K, V]) Run(ctx context.Context) error {
	q.mu.Lock()
	if q.started {
		q.mu.Unlock()
		return ErrRunTwice
	}
	q.started = true
	close(q.running)
	q.workers.ctx = ctx
	q.startWorkers()
	q.mu.Unlock()

	q.dispatch(ctx)

	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.changed()
	q.mu.Unlock()
	q.workers.wg.Wait()
	return ctx.Err()
}

// wake asks the dispatcher to look at the heap again.
func (q *Queue[K, V]) wake() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// dispatch keeps one timer armed for the earliest deadline and wakes the workers when it
// passes. Workers take due items themselves; the dispatcher only wakes them, so a burst of
// due work costs no hand-off per item.
func (q *Queue[K, V]) dispatch(ctx context.Context) {
	timer := q.clock.NewTimer(time.Hour)
	stopTimer(timer)
	defer stopTimer(timer)
	for {
		wait, plan := q.plan()
		stopTimer(timer)
		if wait > 0 {
			timer.Reset(wait)
		}
		q.mu.Lock()
		q.armedPlan = plan // WaitIdle waits for this: see there
		q.changed()
		q.mu.Unlock()

		select {
		case <-ctx.Done():
			return
		case <-q.kick:
		case <-timer.C():
		}
	}
}

// plan looks at the earliest deadline and returns how long the timer must wait for it
// (none when it is 0 or less), with the number of this plan. When the deadline has passed
// it wakes the workers instead.
func (q *Queue[K, V]) plan() (wait time.Duration, plan uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.plans++
	next, ok := q.next()
	if !ok {
		q.armed = maxNanos
		return 0, q.plans
	}
	now := toNanos(q.clock.Now())
	if at := next.at; at > now {
		q.armed = at
		return sub(at, now), q.plans
	}
	q.armed = now
	q.cond.Broadcast()
	return 0, q.plans
}

// stopTimer stops t and drains a value it may have delivered, so that a later Reset cannot
// be followed by a stale tick (fake clocks still deliver one) and a fake clock never blocks
// sending to a full channel.
func stopTimer(t clock.Timer) {
	t.Stop()
	select {
	case <-t.C():
	default:
	}
}

// worker runs due work until the queue closes, or until SetWorkers leaves no room for it
// (w is at or past the limit). Each round claims the next due items under the lock (a
// batch), calls the work function for each of them outside it, and finishes the attempts
// (records their outcomes) under the lock again.
func (q *Queue[K, V]) worker(ctx context.Context, w int32) {
	b := &q.batches[w]
	q.mu.Lock()
	defer q.mu.Unlock()
	defer q.workers.exited(w)
	// ctx is checked too: closed is set only once the dispatcher has seen ctx done, and
	// until then a worker returning from an attempt would start the next due item.
	for !q.closed && ctx.Err() == nil && int(w) < q.workers.limit {
		if !q.claimNextDue(b) {
			q.sleepers.Add(1)
			q.cond.Wait()
			q.sleepers.Add(-1)
			continue
		}

		q.mu.Unlock()
		q.callBatch(ctx, b, w)
		q.mu.Lock()

		q.finishDone(b)
		q.putBackUnstarted(b) // when ctx ended the round, or SetWorkers left no room for w
	}
}

// callBatch calls the work function for each claim of b that nobody took back, in order,
// until ctx is done or SetWorkers leaves no room for worker w. The attempts it has done are finished by the next worker that claims
// work, or by this one at the end of the round; when every other worker waits for work, it
// finishes them before its next call if the lock is free, so that a slow call does not
// hold back the outcome of those before it.
func (q *Queue[K, V]) callBatch(ctx context.Context, b *batch[K, V], w int32) {
	unfinished := false
	for i := range b.n {
		c := &b.claims[i]
		if ctx.Err() != nil || w >= q.workers.current.Load() {
			return
		}
		if unfinished && int(q.sleepers.Load()) >= int(q.workers.running.Load())-1 && q.mu.TryLock() {
			q.finishDone(b)
			q.mu.Unlock()
			unfinished = false
		}
		if !c.state.CompareAndSwap(claimed, started) {
			continue // taken back by Cancel, Schedule or an idle worker
		}
		c.err = q.call(ctx, c.a.key, c.a.value)
		c.hash = q.index.hash(c.a.key) // here, outside the lock, for finish's release
		c.state.Store(done)            // publishes err and hash to whoever finishes it
		unfinished = true
	}
}

// finishDone finishes the attempts of b that are done. q.mu must be held.
func (q *Queue[K, V]) finishDone(b *batch[K, V]) {
	for i := range b.n {
		if c := &b.claims[i]; c.state.Load() == done {
			q.finish(c)
			c.state.Store(finished)
		}
	}
}

// putBackUnstarted puts the claims of b that were not started back in the heap: Run is
// stopping, or the worker is past the limit. q.mu must be held.
func (q *Queue[K, V]) putBackUnstarted(b *batch[K, V]) {
	for i := range b.n {
		if c := &b.claims[i]; c.state.CompareAndSwap(claimed, revoked) {
			q.putBack(c)
		}
	}
}

// call runs the work function, turning a panic into a *PanicError.
func (q *Queue[K, V]) call(ctx context.Context, key K, value V) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return q.work(ctx, key, value)
}

// finish records the outcome of the started claim c, and schedules its retry if it failed.
// q.mu must be held.
func (q *Queue[K, V]) finish(c *claim[K, V]) {
	idx := c.slot
	c.slot = -1
	s := q.slots.at(idx)
	s.markFinished()
	q.active--
	q.changed()
	switch gen := c.it.seq; {
	case s.gen != gen && s.isPending():
		// Replaced while running: the new generation runs now if it came due meanwhile.
		if s.isParked() {
			s.markUnparked()
			q.push(idx, s.due)
		}
	case s.gen != gen:
		q.freeFinished(idx, c.hash) // cancelled while running
	case c.err == nil || (q.backoff.MaxAttempts > 0 && int(c.a.n) >= q.backoff.MaxAttempts):
		q.freeFinished(idx, c.hash)
	default:
		at := add(toNanos(q.clock.Now()), q.backoff.delay(c.a.n))
		s.markRetrying()
		q.push(idx, at)
	}
}
