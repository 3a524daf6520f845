package timedqueue

// slotTable holds the slots in pages of pageSlots. Growing it never copies a slot and
// leaves at most the rest of the last page unused, where one slice grown by append would
// copy them all at every growth and keep up to a quarter of them unused: 8 bytes a key at
// a million keys of 64-byte slots. Once a page is full its slots never move.
type slotTable[K comparable, V any] struct {
	pages [][]slot[K, V] // all but the last hold pageSlots slots; the last grows to that
	n     int
}

const (
	pageBits  = 10
	pageSlots = 1 << pageBits // 64 KiB pages for 64-byte slots
	pageMask  = pageSlots - 1
)

func (t *slotTable[K, V]) len() int { return t.n }

// at returns slot i, which must exist.
func (t *slotTable[K, V]) at(i int32) *slot[K, V] { return &t.pages[i>>pageBits][i&pageMask] }

// add appends a zero slot and returns its number.
func (t *slotTable[K, V]) add() int32 {
	last := len(t.pages) - 1
	if last < 0 || len(t.pages[last]) == pageSlots {
		t.pages = append(t.pages, nil)
		last++
	}
	p := t.pages[last]
	if len(p) == cap(p) { // grows by doubling up to a full page, not past it as append would
		np := make([]slot[K, V], len(p), min(max(2*cap(p), 8), pageSlots))
		copy(np, p)
		p = np
	}
	t.pages[last] = append(p, slot[K, V]{})
	t.n++
	return int32(t.n - 1)
}
