package timedqueue

// item is one entry of the schedule heap, 16 bytes. The deadline is stored inline so that
// sifting never touches the slots. seq is the item's number in the order items were pushed,
// which breaks ties between equal deadlines, and it is also the generation of the slot it
// was pushed for: the item is live while its slot's gen is still seq, and stale once the
// slot was since cancelled, replaced or reused (cancel is lazy: a stale item stays until it
// reaches the top or a compaction drops it). See nextSeq for what happens when 32 bits of
// numbers run out.
type item struct {
	at   int64  // when the item is due, in unix nanoseconds (see toNanos)
	seq  uint32 // push order, and the generation of the slot it was pushed for
	slot int32  // index into Queue.slots
}

func (a item) less(b item) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// itemHeap is a 4-ary min-heap ordered by (at, seq). A 4-ary heap is shallower than a binary
// one and its children share cache lines, which matters at a million items.
type itemHeap []item

func (h *itemHeap) push(x item) {
	*h = append(*h, x)
	h.up(len(*h) - 1)
}

// pop removes and returns the smallest item. The heap must not be empty.
//
// It moves the hole left at the top down to a leaf along the smallest children, then puts
// the last item there and sifts it up (Floyd's bottom-up variant): the last item almost
// always belongs near the bottom, so this saves the comparison with it at every level.
func (h *itemHeap) pop() item {
	s := *h
	top := s[0]
	last := len(s) - 1
	x := s[last]
	s = s[:last]
	*h = s
	if last == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= last {
			break
		}
		m := c
		for j := c + 1; j < min(c+4, last); j++ {
			if s[j].less(s[m]) {
				m = j
			}
		}
		s[i] = s[m]
		i = m
	}
	s[i] = x
	s.up(i)
	return top
}

func (h itemHeap) up(i int) {
	x := h[i]
	for i > 0 {
		p := (i - 1) / 4
		if !x.less(h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

func (h itemHeap) down(i int) {
	n := len(h)
	x := h[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+4, n)
		for j := c + 1; j < end; j++ {
			if h[j].less(h[m]) {
				m = j
			}
		}
		if !h[m].less(x) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = x
}

// init restores the heap order of the whole slice in O(n).
func (h itemHeap) init() {
	if len(h) < 2 {
		return // (len(h)-2)/4 truncates to 0 for an empty heap, and down(0) would panic
	}
	for i := (len(h) - 2) / 4; i >= 0; i-- {
		h.down(i)
	}
}
