package timedqueue

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// run is what a worker remembers of the attempt it runs.
type run struct {
	slot int32
	gen  uint32
	due  int64
}

// attempt is what a worker takes out of the lock to call the work function with.
type attempt[K comparable, V any] struct {
	key   K
	value V
	n     uint32        // 1 for the first attempt of a scheduling
	lag   time.Duration // how late it starts: from the time it was due to the claim
}

// tracer is told of the start and the outcome of every attempt, outside the lock, by the
// worker that runs it. Only this package's tests set one (Queue.trace), to see attempt
// numbers, lags and retry times, which the API does not show.
type tracer[K comparable] interface {
	started(key K, attempt int, lag time.Duration)
	finished(key K, attempt int, err error, retryAt time.Time)
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
	q.mu.Unlock()

	var wg sync.WaitGroup
	for w := range q.runs {
		wg.Go(func() { q.worker(ctx, int32(w)) })
	}
	q.dispatch(ctx)

	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.changed()
	q.mu.Unlock()
	wg.Wait()
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
	q.dropStale()
	if len(q.heap) == 0 {
		q.armed = maxNanos
		return 0, q.plans
	}
	now := toNanos(q.clock.Now())
	if at := q.heap[0].at; at > now {
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

// worker runs due work until the queue closes. Each round claims the next due item under
// the lock, calls the work function outside it, finishes the attempt (records its outcome)
// under the lock again, and reports it outside the lock.
func (q *Queue[K, V]) worker(ctx context.Context, w int32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	// ctx is checked too: closed is set only once the dispatcher has seen ctx done, and
	// until then a worker returning from an attempt would start the next due item.
	for !q.closed && ctx.Err() == nil {
		a, ok := q.claimNext(w)
		if !ok {
			q.cond.Wait()
			continue
		}

		q.mu.Unlock()
		if q.trace != nil {
			q.trace.started(a.key, int(a.n), a.lag)
		}
		err := q.call(ctx, a.key, a.value)
		q.mu.Lock()

		retryAt := q.finish(w, a.n, err)

		if q.trace != nil {
			q.mu.Unlock()
			q.trace.finished(a.key, int(a.n), err, retryAt)
			q.mu.Lock()
		}
	}
}

// claimNext takes the next due item off the heap for worker w and marks its key running.
// It returns false when no item is due; then, if the dispatcher's timer is not set for the
// earliest deadline, it asks the dispatcher to set it. q.mu must be held.
func (q *Queue[K, V]) claimNext(w int32) (a attempt[K, V], ok bool) {
	for {
		q.dropStale()
		if len(q.heap) == 0 {
			q.armed = maxNanos // the dispatcher sleeps until a Schedule wakes it
			return a, false
		}
		now := toNanos(q.clock.Now())
		head := q.heap[0]
		if head.at > now {
			if head.at < q.armed || q.armed <= now {
				q.wake() // the dispatcher is not armed for this head yet
			}
			return a, false
		}
		q.heap.pop()
		q.shrinkHeap()
		s := &q.slots[head.slot]
		if s.state&running != 0 {
			s.state |= parked // runs when the current attempt of this key returns
			continue
		}
		s.state = s.state&^pending | running
		q.active++
		if s.attempts() < attemptCeiling {
			s.state += attemptOne
		}
		q.runs[w] = run{slot: head.slot, gen: s.gen, due: s.due}
		a = attempt[K, V]{key: s.key, value: s.value, n: s.attempts()}
		if head.at > minNanos { // no lag for the zero time and times before 1678: "at once"
			a.lag = max(0, sub(now, head.at))
		}
		return a, true
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

// finish records the outcome of worker w's attempt and returns when it will be retried
// (zero for never). q.mu must be held.
func (q *Queue[K, V]) finish(w int32, attempt uint32, err error) (retryAt time.Time) {
	r := q.runs[w]
	q.runs[w] = run{slot: -1}
	s := &q.slots[r.slot]
	s.state &^= running
	q.active--
	defer q.changed()
	switch {
	case s.gen != r.gen && s.state&pending != 0:
		// Replaced while running: the new generation runs now if it came due meanwhile.
		if s.state&parked != 0 {
			s.state &^= parked
			q.heap.push(item{at: s.due, seq: q.seq, slot: r.slot, gen: s.gen})
			q.seq++
		}
	case s.gen != r.gen:
		q.release(r.slot) // cancelled while running
	case err == nil || (q.backoff.MaxAttempts > 0 && int(attempt) >= q.backoff.MaxAttempts):
		q.release(r.slot)
	default:
		at := add(toNanos(q.clock.Now()), q.backoff.delay(attempt))
		s.state |= pending
		q.heap.push(item{at: at, seq: q.seq, slot: r.slot, gen: s.gen})
		q.seq++
		retryAt = q.timeOf(at)
	}
	return retryAt
}

// runOf returns the run of the worker that runs slot idx, or nil. A slot does not record
// its worker: the scan over the few workers is cheaper than 4 bytes in every slot.
func (q *Queue[K, V]) runOf(idx int32) *run {
	for w := range q.runs {
		if q.runs[w].slot == idx {
			return &q.runs[w]
		}
	}
	return nil
}
