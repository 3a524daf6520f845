package timedqueue

// Stale items. Schedule and Cancel never search the heap for a key's item: they give the
// key's slot a new generation (see nextSeq), and the item of the old one, which no longer
// matches it, is stale. A stale item stays where it is, counted in Queue.dead, until it
// reaches the top of the heap or the head of the ready run (dropStale), or until a sweep
// drops every stale item at once: a compaction once they are a quarter of the items, a
// renumbering (seq.go), or the rebuild of the slots after a large drain (shrinkSlots).

// live reports whether it is the current, pending, generation of its slot.
func (q *Queue[K, V]) live(it item) bool {
	s := q.slots.at(it.slot)
	return s.gen == it.seq && s.hasItem()
}

// dropStale drops stale items off the top of the heap and the head of the run. q.mu must
// be held.
func (q *Queue[K, V]) dropStale() {
	for len(q.heap) > 0 && !q.live(q.heap[0]) {
		q.heap.pop()
		q.dead--
	}
	for len(q.ready) > 0 && !q.live(q.ready[0]) {
		q.takeRunHead()
		q.dead--
	}
}

// compactHeap drops every stale item once they are a quarter of the heap, so that lazy
// cancellation costs O(1) amortized and bounded memory. q.mu must be held.
func (q *Queue[K, V]) compactHeap() {
	if q.dead < 64 || q.dead*4 < len(q.heap)+len(q.ready) {
		return
	}
	q.sweepStale(nil)
	q.shrinkHeap()
}

// sweepStale drops every stale item from the heap and the run, passes each live one through
// fix (nil: none) and rebuilds the heap; the run keeps its order. Items are judged live
// before fix changes them. q.mu must be held.
func (q *Queue[K, V]) sweepStale(fix func(*item)) {
	n := q.keepLive(q.heap, fix)
	clear(q.heap[n:])
	q.heap = q.heap[:n]
	q.heap.init() // dropping items broke the shape
	q.ready = q.ready[:q.keepLive(q.ready, fix)]
	if len(q.ready) == 0 {
		q.ready = nil
	}
	q.dead = 0
}

// keepLive moves the live items of s to its front, in order, passing each through fix (nil:
// none), and returns how many there are. It works in place: taking the address of a copy
// would move every item to the heap. q.mu must be held.
func (q *Queue[K, V]) keepLive(s []item, fix func(*item)) int {
	n := 0
	for i := range s {
		if q.live(s[i]) {
			if fix != nil {
				fix(&s[i])
			}
			s[n] = s[i]
			n++
		}
	}
	return n
}
