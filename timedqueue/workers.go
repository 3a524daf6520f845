package timedqueue

import (
	"context"
	"sync"
	"sync/atomic"
)

// workerSet is the queue's workers: how many may run (limit, at most Options.Workers),
// which run, and the context and wait group of the run. Workers are numbered; those below
// the limit run, and one at or past it leaves after the call it is in: it puts back the
// rest of its round. Its fields but running and current are guarded by the queue's lock.
type workerSet struct {
	limit   int
	alive   []bool // by worker number: its goroutine runs
	running atomic.Int32
	current atomic.Int32 // limit, for a worker between two calls of its round
	ctx     context.Context
	wg      sync.WaitGroup
}

// startWorkers starts a goroutine for every worker below the limit that has none, once Run
// has started and until it stops. q.mu must be held.
func (q *Queue[K, V]) startWorkers() {
	if !q.started || q.closed {
		return
	}
	ws := &q.workers
	for w := range ws.limit {
		if !ws.alive[w] {
			ws.alive[w] = true
			ws.running.Add(1)
			ws.wg.Go(func() { q.worker(ws.ctx, int32(w)) })
		}
	}
}

// exited records that worker w's goroutine has returned. q.mu must be held.
func (ws *workerSet) exited(w int32) {
	ws.alive[w] = false
	ws.running.Add(-1)
}

// SetWorkers lets n workers run work from now on: at least 1, at most Options.Workers (a
// value out of that range counts as the nearer bound). It returns the number it set. More
// workers start at once; when there are to be fewer, those past the limit leave once the
// call they are in returns (a worker never drops work it has claimed: what it has not
// started goes back to the queue, for another to take). A queue starts with Options.Workers workers. It does not
// block on running work and is safe for concurrent use, before, during and after Run.
func (q *Queue[K, V]) SetWorkers(n int) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(max(n, 1), len(q.batches))
	q.workers.limit = n
	q.workers.current.Store(int32(n))
	q.startWorkers()
	q.cond.Broadcast() // a sleeping worker past the limit leaves
	return n
}

// Workers returns how many workers may run work: what SetWorkers last set, or
// Options.Workers.
func (q *Queue[K, V]) Workers() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.workers.limit
}
