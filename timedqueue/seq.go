package timedqueue

import "slices"

// Numbers. Every push of an item and every cancel takes a new number from nextSeq. An item
// carries its number as seq, and the slot it was pushed for keeps the number of its latest
// schedule or cancel as gen, so one 32-bit field in each does the work of two: it orders
// items with equal deadlines as they were pushed, and it tells a live item (seq == gen)
// from a stale one. That keeps an item at 16 bytes instead of 24, 8 MB less at a million
// pending keys.
//
// 32 bits run out after about four billion schedules and cancels, an hour at a million a
// second. Before they do, renumber gives the pending work the numbers 1 to n again, in the
// order its items already had, and drops the stale items, whose numbers would otherwise
// come back as live ones. Number 0 is never given: it names no generation.

// nextSeq returns a new number, renumbering first when the numbers have run out. It may
// drop stale items and change every slot's gen, so it is called before a caller counts an
// item stale or keeps a gen. q.mu must be held.
func (q *Queue[K, V]) nextSeq() uint32 {
	if q.seq >= q.seqLimit {
		q.renumber()
	}
	q.seq++
	return q.seq
}

// push schedules the next attempt of the pending slot idx at at, as a new generation.
// q.mu must be held.
func (q *Queue[K, V]) push(idx int32, at int64) {
	seq := q.nextSeq()
	q.slots.at(idx).gen = seq
	q.heap.push(item{at: at, seq: seq, slot: idx})
}

// renumber gives the live items, in the heap, in the ready run and taken by workers, the
// numbers 1 to n in their (at, seq) order, and every other key in use a number after them;
// it drops the stale items and unmarks the claims of replaced work. It costs a sort of the
// pending items under the lock, once per four billion numbers. q.mu must be held.
func (q *Queue[K, V]) renumber() {
	live := make([]item, 0, len(q.heap)+len(q.ready))
	for _, it := range q.heap {
		if q.live(it) {
			live = append(live, it)
		}
	}
	for _, it := range q.ready {
		if q.live(it) {
			live = append(live, it)
		}
	}
	q.batches.each(func(c *claim[K, V]) {
		if q.slots.at(c.slot).gen == c.it.seq {
			live = append(live, c.it)
		}
	})
	slices.SortFunc(live, compareItems)
	gens := make([]uint32, q.slots.len())
	var n uint32
	for _, it := range live {
		n++
		gens[it.slot] = n
	}
	for i := range q.slots.len() {
		if q.slots.at(int32(i)).isUsed() && gens[i] == 0 {
			n++ // parked, or running with no newer work: its gen names no item
			gens[i] = n
		}
	}
	q.renumberItems(gens)
	for i := range q.slots.len() {
		q.slots.at(int32(i)).gen = gens[i] // 0 for free and retired slots: no item names them any more
	}
	q.seq = n
}

// renumberItems gives the live items the numbers gens holds for their slots and drops the
// stale ones; a claim of replaced work gets number 0, which no slot's gen will be. The
// slots still hold their old gens. q.mu must be held.
func (q *Queue[K, V]) renumberItems(gens []uint32) {
	q.sweepStale(func(it *item) { it.seq = gens[it.slot] })
	q.batches.each(func(c *claim[K, V]) {
		if q.slots.at(c.slot).gen == c.it.seq {
			c.it.seq = gens[c.slot]
		} else {
			c.it.seq = 0
		}
	})
}
