package timedqueue

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// runner is a queue's run: its state, its one timer and its workers. The queue's lock
// guards it.
type runner struct {
	running, closed bool            // Run has started; Run is stopping or has returned
	ctx             context.Context // Run's, for the workers
	timer           clock.Timer     // nil until Run starts
	armed           bool            // the timer is set, for armedAt
	armedAt         int64
	limit, workers  int // how many workers may run (SetWorkers), and how many do
	active          int // keys whose work a worker has taken and not finished
	wg              sync.WaitGroup
}

// Run runs due work until ctx is done. Then it stops starting work, waits for every running
// call to return (their ctx, which is ctx, is done too) and returns ctx's error. Work still
// pending stays in the queue, where Len and Get see it. Every goroutine Run starts has
// ended when it returns. A Queue runs once: a second call returns [ErrRunTwice].
func (q *Queue[K, V]) Run(ctx context.Context) error {
	q.mu.Lock()
	if q.running {
		q.mu.Unlock()
		return ErrRunTwice
	}
	q.running, q.ctx = true, ctx
	close(q.started)
	q.timer = q.clock.NewTimer(time.Hour)
	stopTimer(q.timer)
	q.startWorkers()
	q.arm(toNanos(q.clock.Now()), false)
	q.mu.Unlock()

	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-q.timer.C():
			q.mu.Lock()
			if now := toNanos(q.clock.Now()); !q.armed || q.armedAt <= now {
				q.armed = false
				q.arm(now, false)
			} // else a tick of an earlier setting: WaitIdle has set the timer since, for later
			q.mu.Unlock()
		}
	}

	q.mu.Lock()
	q.closed = true
	stopTimer(q.timer)
	q.cond.Broadcast()
	q.changed()
	q.mu.Unlock()
	q.wg.Wait()
	return ctx.Err()
}

// arm sets the timer for the earliest deadline, at now or later, unless it is set for it
// already (force sets it anew: see WaitIdle); when that deadline has come, it wakes a
// worker instead. Before Run and once it stops, it does nothing. q.mu must be held.
func (q *Queue[K, V]) arm(now int64, force bool) {
	if q.timer == nil || q.closed || len(q.heap) == 0 {
		return
	}
	at := q.heap[0].at
	if at <= now {
		q.cond.Signal()
		return
	}
	if force || !q.armed || q.armedAt != at {
		stopTimer(q.timer)
		q.timer.Reset(until(at, now))
		q.armed, q.armedAt = true, at
	}
}

// stopTimer stops t and drains a value it may have delivered, so that a fake clock never
// blocks sending to a full channel (which it would do holding its lock, which Reset needs),
// and no stale tick follows a Reset.
func stopTimer(t clock.Timer) {
	t.Stop()
	select {
	case <-t.C():
	default:
	}
}

// worker runs due work, one key at a time, until Run stops or SetWorkers leaves no room
// for it. It takes the work and finishes it under the lock and calls it without.
func (q *Queue[K, V]) worker(ctx context.Context) {
	q.mu.Lock()
	var e *entry[K, V] // the entry whose work this worker called last
	var h uint64       // its key's hash
	for {
		if e != nil {
			q.finish(e, h)
		}
		// ctx is checked too: closed is set only once Run has seen ctx done, and until
		// then a worker returning from a call would start the next due key.
		if q.closed || ctx.Err() != nil || q.workers > q.limit {
			break
		}
		if e = q.take(); e == nil {
			q.cond.Wait()
			continue
		}
		key, value := e.key, e.value
		q.mu.Unlock()
		q.work(ctx, key, value)
		h = q.hash(key) // here, outside the lock
		q.mu.Lock()
	}
	q.workers--
	q.mu.Unlock()
}

// take returns the earliest due entry whose key is not running, marked running, or nil;
// due entries whose key runs are parked on the way. Then it wakes another worker for the
// due work it leaves, or sets the timer for the next deadline. q.mu must be held.
func (q *Queue[K, V]) take() *entry[K, V] {
	now := toNanos(q.clock.Now())
	defer q.arm(now, false)
	for len(q.heap) > 0 && q.heap[0].at <= now {
		e := q.heap.remove(0)
		if !e.running {
			e.running = true
			q.active++
			return e
		}
		e.parked = true
	}
	return nil
}

// finish ends the call of e's work: work parked behind it goes back in the heap, where
// it is due, and a key with nothing pending is dropped. q.mu must be held.
func (q *Queue[K, V]) finish(e *entry[K, V], h uint64) {
	e.running = false
	q.active--
	switch {
	case e.parked:
		e.parked = false
		q.heap.push(e)
	case e.index < 0:
		q.drop(h, e)
	}
	q.changed()
}

// startWorkers starts workers up to the limit, once Run has started and until it stops.
// q.mu must be held.
func (q *Queue[K, V]) startWorkers() {
	for ctx := q.ctx; q.running && !q.closed && q.workers < q.limit; q.workers++ {
		q.wg.Go(func() { q.worker(ctx) })
	}
}

// SetWorkers lets n workers run work from now on: at least 1, at most Options.Workers (a
// value out of that range counts as the nearer bound). It returns the number it set. More
// workers start at once; when there are to be fewer, those past the limit leave once the
// call they are in returns. A queue starts with Options.Workers workers. It does not block
// on running work and is safe for concurrent use, before, during and after Run.
func (q *Queue[K, V]) SetWorkers(n int) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.limit = min(max(n, 1), q.maxWorkers)
	q.startWorkers()
	q.cond.Broadcast() // a waiting worker past the limit leaves
	return q.limit
}

// Workers returns how many workers may run work: what SetWorkers last set, or
// Options.Workers.
func (q *Queue[K, V]) Workers() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.limit
}
