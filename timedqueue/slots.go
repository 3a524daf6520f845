package timedqueue

// slot holds one key's state. Slots live in one slice and are found through the index, so a
// pending item costs no allocation of its own and no pointer for the collector to chase.
type slot[K comparable, V any] struct {
	key   K
	value V
	due   int64  // the time the current generation was scheduled for
	gen   uint32 // a new number (see nextSeq) at every schedule and cancel; its heap item's seq
	state uint32 // flags | attempts<<8: see slotstate.go
}

// alloc takes a free slot for key, or appends one. q.mu must be held.
func (q *Queue[K, V]) alloc(key K) int32 {
	if len(q.free) == 0 && q.index.retired > 0 && (q.index.retired >= q.slots.len()/8 || q.index.full()) {
		q.sweep() // an O(table) scan, paid for by at least an eighth of the slots
	}
	var idx int32
	if n := len(q.free); n > 0 {
		idx = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		idx = q.slots.add()
	}
	s := q.slots.at(idx)
	s.key = key
	s.state = inUse
	q.index.put(key, idx)
	return idx
}

// release frees the slot of a key that has no pending or running work, and removes the
// key from the index. Its generation is kept, so heap items that still name the slot stay
// stale after it is reused. Cancel uses it: its lookup has just read the key's bucket.
// q.mu must be held.
func (q *Queue[K, V]) release(idx int32) { q.releaseHashed(idx, q.index.hash(q.slots.at(idx).key)) }

// releaseHashed is release for a key whose hash, h, is known.
func (q *Queue[K, V]) releaseHashed(idx int32, h uint64) {
	q.index.remove(idx, h)
	q.clearSlot(idx, 0)
	q.free = append(q.free, idx)
	q.shrinkSlots()
}

// freeFinished frees the slot of a key whose last attempt has finished, whose hash is h.
// While a burst is handed out from the ready run it retires the slot, which costs no probe
// of the index; otherwise it releases it, so that the slot is free for the next key at
// once and a queue whose keys come and go keeps no more slots than keys.
func (q *Queue[K, V]) freeFinished(idx int32, h uint64) {
	if len(q.ready) > 0 {
		q.retire(idx)
		return
	}
	q.releaseHashed(idx, h)
}

// retire frees the slot of a key that has no pending or running work but leaves its index
// entry, which no lookup matches any more, to a later sweep: a worker finishing a burst of
// a million keys then does not probe the index, a cache miss per key, under the lock. The
// slot keeps its key until the sweep, which may need to hash it again (see index). q.mu
// must be held.
func (q *Queue[K, V]) retire(idx int32) {
	s := q.slots.at(idx)
	var zeroV V
	s.value, s.state = zeroV, retired
	q.index.retire()
	q.shrinkSlots()
}

// clearSlot drops the slot's key and value, so that the collector may free what they
// point to, and sets its state.
func (q *Queue[K, V]) clearSlot(idx int32, state uint32) {
	s := q.slots.at(idx)
	var zeroK K
	var zeroV V
	s.key, s.value, s.state = zeroK, zeroV, state
}

// sweep deletes the index entries of retired slots and puts the slots on the free list.
// q.mu must be held.
func (q *Queue[K, V]) sweep() {
	q.index.sweep(func(idx int32) {
		q.clearSlot(idx, 0)
		q.free = append(q.free, idx)
	})
}

// minShrink is the capacity under which slices and maps are never rebuilt smaller.
const minShrink = 4096

// shrinkHeap gives memory back after a large drain. q.mu must be held.
func (q *Queue[K, V]) shrinkHeap() {
	if c := cap(q.heap); c > minShrink && len(q.heap) < c/4 {
		q.heap = append(make(itemHeap, 0, 2*len(q.heap)), q.heap...)
	}
}

// shrinkSlots rebuilds the slots, the free list and the index once fewer than a quarter of
// the slots are used, since a Go map never shrinks by itself. The cost, O(n), is paid once
// per n releases. q.mu must be held.
func (q *Queue[K, V]) shrinkSlots() {
	if n := q.slots.len(); n <= minShrink || q.index.len() >= n/4 {
		return
	}
	if q.earliest() <= q.lastClaim {
		return // a drain is under way: rebuild once it is over, not at every halving
	}
	remap := make([]int32, q.slots.len())
	var slots slotTable[K, V]
	for i := range q.slots.len() {
		s := q.slots.at(int32(i))
		if !s.isUsed() {
			remap[i] = -1
			continue
		}
		remap[i] = slots.add()
		*slots.at(remap[i]) = *s
	}
	q.sweepStale(func(it *item) { it.slot = remap[it.slot] }) // live, so in use and kept
	q.batches.remap(remap)
	q.slots, q.free = slots, nil
	q.index.rebuild(slots.len())
	for i := range q.slots.len() {
		q.index.put(q.slots.at(int32(i)).key, int32(i))
	}
	q.shrinkHeap()
}
