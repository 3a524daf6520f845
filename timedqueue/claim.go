package timedqueue

import "sync/atomic"

// maxBatch is the most due items a worker claims in one hold of the lock. A burst of due
// work then costs one lock hold, one clock reading and one wake-up per batch rather than
// per item, and the batch's finishes run together, where the index's cache misses overlap.
const maxBatch = 32

// A claim's state: from claimed, either its worker starts it (without the lock) or Cancel,
// Schedule or an idle worker takes it back (revoked, under the lock), by compare-and-swap,
// whichever comes first. Once started it belongs to its worker until the call is done; then
// whoever holds the lock may finish it.
const (
	claimed  uint32 = iota // taken off the heap; its key counts as running
	started                // its worker has begun the call
	done                   // the call has returned; err and hash are set
	revoked                // taken back before it started; its worker skips it
	finished               // its outcome is recorded; the slot may be another key's by now
)

// claim is one due item a worker took off the heap, with what the worker needs to call the
// work function and to finish the attempt. The fields other than state are written under
// the lock while the claim is claimed; the worker reads them after it started the claim.
type claim[K comparable, V any] struct {
	state   atomic.Uint32
	slot    int32 // -1 once revoked or finished
	due     int64 // the slot's due when claimed
	it      item  // the heap item it was: its seq is the generation it runs, and it is put back as it was when revoked
	counted bool  // claiming counted an attempt (not past attemptCeiling)
	a       attempt[K, V]

	// Set by the worker before done: the call's outcome and the key's hash for the index.
	err  error
	hash uint64
}

// claimNextDue fills b, which has been finished, with the next due items, up to maxBatch,
// marking their keys running; when none is due it takes back unstarted claims of other
// workers. It returns false when it found no work; then, if the dispatcher's timer is not
// set for the earliest deadline, it asks the dispatcher to set it. q.mu must be held.
func (q *Queue[K, V]) claimNextDue(b *batch[K, V]) bool {
	for w := range q.batches {
		q.finishDone(&q.batches[w]) // so that no outcome waits for a slow call after it
	}
	b.n = 0
	now := toNanos(q.clock.Now())
	q.lastClaim = now
	q.extractDue(now) // before any pop, which would disorder the array of a burst
	for b.n < maxBatch {
		if it, ok := q.next(); !ok || it.at > now {
			break
		}
		it := q.takeNext()
		if s := q.slots.at(it.slot); s.isRunning() {
			s.markParked() // runs when the current attempt of this key returns
			continue
		}
		q.claimItem(b, it, now)
	}
	q.shrinkHeap()
	if b.n == 0 && !q.steal(b) {
		if it, ok := q.next(); !ok {
			q.armed = maxNanos // the dispatcher sleeps until a Schedule wakes it
		} else if it.at < q.armed || q.armed <= now {
			q.wake() // the dispatcher is not armed for this head yet
		}
		return false
	}
	if b.n > 1 && q.sleepers.Load() > 0 {
		q.cond.Signal() // an idle worker may take over what this one cannot start yet
	}
	return true
}

// claimItem adds the due item it, popped off the heap, to b and marks its key running.
func (q *Queue[K, V]) claimItem(b *batch[K, V], it item, now int64) {
	s := q.slots.at(it.slot)
	counted := s.markClaimed()
	c := &b.claims[b.n]
	b.n++
	c.state.Store(claimed)
	c.slot, c.due, c.it, c.counted = it.slot, s.due, it, counted
	c.a = attempt[K, V]{key: s.key, value: s.value, n: s.attempts()}
	if it.at > minNanos { // no lag for the zero time and times before 1678: "at once"
		c.a.lag = max(0, sub(now, it.at))
	}
	c.err = nil
	q.active++
}

// steal moves the claims other workers have not started into b, so that an idle worker
// does not wait while work claimed by a busy one waits too. q.mu must be held.
func (q *Queue[K, V]) steal(b *batch[K, V]) bool {
	for v := range q.batches {
		victim := &q.batches[v]
		if victim == b {
			continue
		}
		for i := 0; i < victim.n && b.n < maxBatch; i++ {
			c := &victim.claims[i]
			if !c.state.CompareAndSwap(claimed, revoked) {
				continue
			}
			n := &b.claims[b.n]
			b.n++
			n.state.Store(claimed)
			n.slot, n.due, n.it, n.counted, n.a = c.slot, c.due, c.it, c.counted, c.a
			n.err = nil
			c.slot = -1
		}
	}
	return b.n > 0
}

// unclaim takes back the claim of slot idx if its worker has not started it, and puts the
// item back in the heap as it was, so that Schedule and Cancel act on pending work rather
// than on work that would start with a value or time they have replaced. The claims after
// it in its batch go back too, so that none of them starts before it. q.mu must be held.
func (q *Queue[K, V]) unclaim(idx int32) {
	b, i := q.batches.find(idx)
	if b == nil || !b.claims[i].state.CompareAndSwap(claimed, revoked) {
		return // not claimed, or started: then it runs, as the doc of Schedule and Cancel says
	}
	q.putBack(&b.claims[i])
	for i++; i < b.n; i++ {
		if c := &b.claims[i]; c.state.CompareAndSwap(claimed, revoked) {
			q.putBack(c)
		}
	}
}

// putBack returns the revoked claim c's item to the heap. q.mu must be held.
func (q *Queue[K, V]) putBack(c *claim[K, V]) {
	s := q.slots.at(c.slot)
	s.markPutBack(c.counted)
	q.heap.push(c.it)
	c.slot = -1
	q.active--
	q.changed()
}

// claimOf returns the claim, claimed, started or done, of slot idx, or nil.
func (q *Queue[K, V]) claimOf(idx int32) *claim[K, V] {
	if b, i := q.batches.find(idx); b != nil {
		return &b.claims[i]
	}
	return nil
}
