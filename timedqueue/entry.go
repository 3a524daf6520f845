package timedqueue

import "slices"

// entry is one key's work: the pending work, whether a call of it runs, and where the
// pending work stands in the heap. The queue's lock guards it. An entry is in the queue's
// index for as long as its key has work pending or running.
type entry[K comparable, V any] struct {
	key   K
	value V
	at    int64        // when the pending work is due, in the queue's nanoseconds (see toNanos)
	seq   uint64       // the number of the Schedule that set at: equal deadlines run in its order
	next  *entry[K, V] // the next entry whose key has the same hash
	index int32        // the entry's place in the heap (of at most 2^31 entries); -1 when not there
	// running: a worker has taken the key's work and calls it. parked: pending work came
	// due while it ran; it waits, out of the heap, for that call to return.
	running, parked bool
}

// pending reports whether the key has work that has not started: in the heap, or parked.
func (e *entry[K, V]) pending() bool { return e.index >= 0 || e.parked }

// The index finds a key's entry: a Go map from the key's hash (hash/maphash) to the
// entries with that hash, chained through next (two keys share a hash with a chance of
// 2^-64). It keys the map by 8 bytes rather than by the key, which would hold a second
// copy of every key, and lets callers hash a key before they take the lock. Its methods
// need q.mu.

// lookup returns key's entry, or nil; h is key's hash.
func (q *Queue[K, V]) lookup(h uint64, key K) *entry[K, V] {
	for e := q.entries[h]; e != nil; e = e.next {
		if e.key == key {
			return e
		}
	}
	return nil
}

// insert adds e, whose key has the hash h and no entry yet.
func (q *Queue[K, V]) insert(h uint64, e *entry[K, V]) {
	e.next = q.entries[h]
	q.entries[h] = e
	q.keys++
	q.peak = max(q.peak, q.keys)
}

// drop removes e, whose key has the hash h, when it has no work pending or running.
func (q *Queue[K, V]) drop(h uint64, e *entry[K, V]) {
	switch p := q.entries[h]; {
	case p == e && e.next == nil:
		delete(q.entries, h)
	case p == e:
		q.entries[h] = e.next
	default:
		for p.next != e {
			p = p.next
		}
		p.next = e.next
	}
	e.next = nil
	q.keys--
	q.shrink()
}

// shrink rebuilds the map and the heap's array once they hold an eighth or less of what
// they held at their peak: a Go map never gives back the memory of deleted keys, and a
// million items drained must not keep it. A rebuild costs O(n) after at least 7n removals.
func (q *Queue[K, V]) shrink() {
	if q.peak < 1024 || q.keys > q.peak/8 {
		return
	}
	entries := make(map[uint64]*entry[K, V], len(q.entries))
	for h, e := range q.entries {
		entries[h] = e
	}
	q.entries, q.heap, q.peak = entries, slices.Clone(q.heap), q.keys
}
