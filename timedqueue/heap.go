package timedqueue

// entryHeap is a 4-ary min-heap of the entries with work in it, earliest first, each entry
// holding its index. Four children a node halve the levels of a binary heap, and with them
// the entries, each a cache miss at a million, that a pop reads on its way down.
type entryHeap[K comparable, V any] []*entry[K, V]

// before reports whether a is due before b: by deadline, then in the order scheduled.
func (a *entry[K, V]) before(b *entry[K, V]) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (h *entryHeap[K, V]) push(e *entry[K, V]) {
	e.index = int32(len(*h))
	*h = append(*h, e)
	h.up(int(e.index))
}

// remove takes the entry at index i out of the heap.
func (h *entryHeap[K, V]) remove(i int) *entry[K, V] {
	s := *h
	e, last := s[i], len(s)-1
	if i != last {
		s.swap(i, last)
	}
	s[last] = nil
	*h = s[:last]
	if i != last {
		h.fix(i)
	}
	e.index = -1
	return e
}

// fix restores the order after the deadline of the entry at index i changed.
func (h entryHeap[K, V]) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h entryHeap[K, V]) up(i int) {
	for i > 0 {
		p := (i - 1) / 4
		if !h[i].before(h[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down moves the entry at index i down to its place and reports whether it moved.
func (h entryHeap[K, V]) down(i int) bool {
	start := i
	for {
		first := 4*i + 1
		if first >= len(h) {
			break
		}
		c := first
		for j := first + 1; j < min(first+4, len(h)); j++ {
			if h[j].before(h[c]) {
				c = j
			}
		}
		if !h[c].before(h[i]) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}

func (h entryHeap[K, V]) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = int32(i), int32(j)
}
