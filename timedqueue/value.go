package timedqueue

// Value returns the value of key's pending work or, when none is pending, the value of the
// attempt of key that a worker has taken, started or not, and true; false when key has
// neither, or when a Cancel since has ended the work that attempt runs (as [Queue.Running]
// reports it). It is Get and Running in one look. A caller that keeps its own state for a
// key and puts where to find it in the value (an index into a table, say) finds it with
// Value for as long as the key has work, without a second index of its own. It is safe for
// concurrent use and does not block on running work.
func (q *Queue[K, V]) Value(key K) (value V, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	idx, ok := q.index.get(key)
	if !ok {
		return value, false
	}
	s := q.slots.at(idx)
	if s.isPending() {
		return s.value, true
	}
	if s.isRunning() {
		if c := q.claimOf(idx); c != nil && c.it.seq == s.gen {
			return c.a.value, true
		}
	}
	return value, false
}
