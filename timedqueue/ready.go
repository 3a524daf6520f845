package timedqueue

import "slices"

// The ready run. When a large share of the heap comes due at once (a burst: a zone goes
// down and a million pods are due), popping the due items one by one costs a sift through
// every level of a million-item heap for each of them, all under the lock. Instead the due
// items leave the heap in one pass over its array, are sorted (in a burst scheduled in
// deadline order they are already in order, which is checked in O(n) first), and are handed
// out from the front of this run,
// which costs nothing per item; the heap keeps the rest. The next item is always the smaller
// of the run's head and the heap's top, so the order stays (at, seq), whatever is scheduled
// or put back meanwhile. Stale items may sit in the run as in the heap, and count in dead.

const (
	// minExtract is the smallest heap a pass is tried on: below it, popping is as cheap.
	minExtract = 1024
	// extractProbes is how many leaves of the heap are read to guess the share that is due.
	// A pass is made when at least a quarter of them are due: then at least about a fifth
	// of the items leave the heap (leaves are three quarters of a 4-ary heap and the latest
	// of it), and the pass, O(n), costs less than the pops it saves, O(n/5 log n).
	extractProbes = 8
	// maxSortRun is the most due items a pass sorts when it finds them out of order. Sorting
	// costs less than popping them, but it is one hold of the lock (about 10 ms for this
	// many), which a Schedule or Cancel would wait for; a larger run out of order is put
	// back, and tried again once the heap has halved.
	maxSortRun = 1 << 16
)

// next returns the earliest live item, of the run or the heap, without taking it, and
// whether there is one. It drops the stale items it finds first. q.mu must be held.
func (q *Queue[K, V]) next() (item, bool) {
	q.dropStale()
	if q.runFirst() {
		return q.ready[0], true
	}
	if len(q.heap) == 0 {
		return item{}, false
	}
	return q.heap[0], true
}

// takeNext removes and returns the item next returned. q.mu must be held.
func (q *Queue[K, V]) takeNext() item {
	if q.runFirst() {
		return q.takeRunHead()
	}
	return q.heap.pop()
}

// runFirst reports whether the run's head comes before the heap's top.
func (q *Queue[K, V]) runFirst() bool {
	return len(q.ready) > 0 && (len(q.heap) == 0 || q.ready[0].less(q.heap[0]))
}

// takeRunHead removes the run's head. The run's array is let go once it is empty.
func (q *Queue[K, V]) takeRunHead() item {
	it := q.ready[0]
	q.ready = q.ready[1:]
	if len(q.ready) == 0 {
		q.ready = nil
	}
	return it
}

// earliest is the deadline of the earliest item, live or stale, or maxNanos.
func (q *Queue[K, V]) earliest() int64 {
	at := int64(maxNanos)
	if len(q.heap) > 0 {
		at = q.heap[0].at
	}
	if len(q.ready) > 0 {
		at = min(at, q.ready[0].at)
	}
	return at
}

// extractDue moves the heap's items due at now into the run, when the run is empty and a
// probe of the heap's leaves says that enough of them are due for the pass to pay. q.mu
// must be held.
func (q *Queue[K, V]) extractDue(now int64) {
	h := q.heap
	n := len(h)
	if len(q.ready) > 0 || n < minExtract || h[0].at > now || (q.extractBelow > 0 && n >= q.extractBelow) {
		return
	}
	firstLeaf := (n-2)/4 + 1
	due := 0
	for p := range extractProbes {
		if h[firstLeaf+(n-firstLeaf)*p/extractProbes].at <= now {
			due++
		}
	}
	if due*4 < extractProbes {
		return
	}
	// Due items move to the front in the order they are met (stale ones too: they are
	// dropped when they reach the run's head); the swapped-out rest becomes the heap.
	w := 0
	for i := range h {
		if h[i].at <= now {
			h[w], h[i] = h[i], h[w]
			w++
		}
	}
	run := h[:w:w] // its own capacity, so that nothing appended to the heap lands in it
	if !inOrder(run) {
		if w > maxSortRun {
			q.heap.init() // the whole array again
			q.extractBelow = n / 2
			return
		}
		slices.SortFunc(run, compareItems)
	}
	q.extractBelow = 0
	q.ready = run
	q.heap = h[w:]
	q.heap.init()
}

// inOrder reports whether s is in (at, seq) order.
func inOrder(s []item) bool {
	for i := 1; i < len(s); i++ {
		if s[i].less(s[i-1]) {
			return false
		}
	}
	return true
}

func compareItems(a, b item) int {
	switch {
	case a.less(b):
		return -1
	case b.less(a):
		return 1
	}
	return 0
}
