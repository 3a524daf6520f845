package store

import (
	"hash/maphash"

	"k8s.io/apimachinery/pkg/types"
)

// stripe is one lock and what it guards: the entries of the keys that hash to it, in slots,
// and an index from key to slot. The lock is a channel of capacity one rather than a mutex
// so that a goroutine waiting for it counts as blocked to testing/synctest, whose bubbles
// the engine's tests run in.
type stripe[E, S any] struct {
	lock    chan struct{}
	num     int          // its place in the Store, for IDs
	seed    maphash.Seed // the Store's
	pages   []*page[E]
	used    int      // slots handed out so far, in the pages
	free    []int32  // slots dropped, to hand out again
	table   []uint32 // the index: 0 is empty, else tag<<24 | slot+1
	n       int      // entries in the index
	genBase uint32   // the highest generation of storage let go (see compact)
	thin    bool     // the mover was told that the stripe has thinned out, and not yet Compact
	mover   Mover[E]
	scratch S
}

// page holds pageSlots slots. A slot is a node (an entry and its key) and a generation.
// A free slot keeps its generation, so that IDs of the entry it held stay stale;
// generations start at 1, so that the zero ID is never live. The generations sit apart
// from the nodes so that a node stays a multiple of 8 bytes with nothing wasted.
type page[E any] struct {
	nodes [pageSlots]node[E]
	gens  [pageSlots]uint32 // generation in the low 31 bits; usedBit while the slot is taken
}

// node is an entry and its key.
type node[E any] struct {
	key types.NamespacedName
	val E
}

const (
	pageBits  = 6 // 64 slots a page: a stripe's last page wastes little
	pageSlots = 1 << pageBits
	slotMask  = 1<<24 - 1
	minTable  = 16
	usedBit   = 1 << 31
	genMask   = usedBit - 1
)

func (st *stripe[E, S]) at(slot int) *node[E] {
	return &st.pages[slot>>pageBits].nodes[slot&(pageSlots-1)]
}

func (st *stripe[E, S]) gen(slot int) *uint32 {
	return &st.pages[slot>>pageBits].gens[slot&(pageSlots-1)]
}

// live returns the node id names, if it is still that entry's.
func (st *stripe[E, S]) live(id ID) *node[E] {
	if !id.valid() || id.slot() >= st.used {
		return nil
	}
	if *st.gen(id.slot()) != usedBit|id.gen() {
		return nil
	}
	return st.at(id.slot())
}

// tag returns the bits of h kept in an index entry, so that a probe reads a slot only
// when they match: bits the stripe and the home bucket do not use.
func tag(h uint64) uint32 { return uint32(h>>48) & 0xff }

// find returns key's node and ID, or nil. h is key's hash.
func (st *stripe[E, S]) find(key types.NamespacedName, h uint64) (*node[E], ID) {
	if st.n == 0 {
		return nil, 0
	}
	mask := uint64(len(st.table) - 1)
	t := tag(h)
	for i := h & mask; ; i = (i + 1) & mask {
		e := st.table[i]
		if e == 0 {
			return nil, 0
		}
		if e>>24 == t {
			slot := int(e&slotMask) - 1
			if n := st.at(slot); n.key == key {
				return n, makeID(st.num, slot, *st.gen(slot)&genMask)
			}
		}
	}
}

// add makes a zero entry for key, whose hash is h, and returns its node and ID. key must
// have none.
func (st *stripe[E, S]) add(key types.NamespacedName, h uint64) (*node[E], ID) {
	var slot int
	if k := len(st.free); k > 0 {
		slot = int(st.free[k-1])
		st.free = st.free[:k-1]
	} else {
		if st.used == maxSlots() {
			panic("store: more than 16,777,216 entries in one stripe")
		}
		if st.used&(pageSlots-1) == 0 {
			st.pages = append(st.pages, new(page[E]))
		}
		slot = st.used
		st.used++
	}
	n := st.at(slot)
	n.key = key
	g := st.gen(slot)
	gen := max(*g&genMask, st.genBase) + 1
	if gen > genMask { // after 2^31 reuses
		gen = 1
	}
	*g = usedBit | gen
	if (st.n+1)*4 > len(st.table)*3 {
		st.grow()
	}
	st.insert(h, tag(h)<<24|uint32(slot+1))
	st.n++
	return n, makeID(st.num, slot, gen)
}

// insert puts index entry e in the first empty bucket from h's home on.
func (st *stripe[E, S]) insert(h uint64, e uint32) {
	mask := uint64(len(st.table) - 1)
	i := h & mask
	for st.table[i] != 0 {
		i = (i + 1) & mask
	}
	st.table[i] = e
}

// grow doubles the index (or makes its first), moving every entry to its home there.
func (st *stripe[E, S]) grow() {
	old := st.table
	st.table = make([]uint32, max(minTable, 2*len(old)))
	for _, e := range old {
		if e != 0 {
			st.insert(st.hashOf(int(e&slotMask)-1), e)
		}
	}
}

// remove frees slot, whose key's hash is h, and deletes its index entry: later entries of
// its probe run shift back into the hole, so that no probe needs a tombstone.
func (st *stripe[E, S]) remove(slot int, h uint64) {
	mask := uint64(len(st.table) - 1)
	want := uint32(slot + 1)
	i := h & mask
	for st.table[i]&slotMask != want {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; st.table[j] != 0; j = (j + 1) & mask {
		// The entry at j may move back to i unless its home lies cyclically in (i, j]:
		// then a probe from its home would stop at the hole.
		home := st.hashOf(int(st.table[j]&slotMask)-1) & mask
		if (j-home)&mask >= (j-i)&mask {
			st.table[i] = st.table[j]
			i = j
		}
	}
	st.table[i] = 0
	st.n--
	*st.at(slot) = node[E]{}
	*st.gen(slot) &^= usedBit
	st.free = append(st.free, int32(slot))
	switch {
	case st.n == 0 && len(st.table) > 4*minTable:
		st.compact() // all of it goes, and nothing moves
	case st.mover != nil && !st.thin && st.thinnedOut():
		// Not now: the drops may be a burst (a zone's evicted pods reported gone), which
		// would compact again and again; the mover has Compact called a while later.
		st.thin = true
		st.mover.Thinned(st.num)
	}
}

// thinnedOut reports whether the stripe's entries have fallen under two thirds of its
// slots, enough of them for a compaction to be worth it.
func (st *stripe[E, S]) thinnedOut() bool { return st.used >= 2*pageSlots && st.n*3 < st.used*2 }

// compact lets the storage of a stripe that has thinned out go, as a Go map never would:
// after a zone outage, the slots of tens of thousands of evicted targets. It moves the
// entries into new storage of their own size, renumbered from 0, and tells the mover of
// each move; when the mover says an entry may not move, nothing moves, and it reports
// false. Generations of the new slots start past the highest of the old, so that an ID of
// the old storage never names an entry of the new one. It costs O(slots), once the slots
// have fallen by a third since the last compaction: O(1) a drop.
func (st *stripe[E, S]) compact() bool {
	var top uint32
	for _, p := range st.pages {
		for j, g := range p.gens {
			top = max(top, g&genMask)
			if g&usedBit != 0 && !st.mover.CanMove(&p.nodes[j].val) {
				return false
			}
		}
	}
	old, oldUsed := st.pages, st.used
	st.pages, st.used, st.free, st.table, st.n = nil, 0, nil, nil, 0
	st.genBase = max(st.genBase, top)
	for s := 0; s < oldUsed; s++ {
		p, j := old[s>>pageBits], s&(pageSlots-1)
		g := p.gens[j]
		if g&usedBit == 0 {
			continue
		}
		n := &p.nodes[j]
		nn, id := st.add(n.key, maphash.Comparable(st.seed, n.key))
		nn.val = n.val
		st.mover.Moved(makeID(st.num, s, g&genMask), id, &nn.val)
	}
	return true
}

// hashOf returns the hash of the key in slot, for the index.
func (st *stripe[E, S]) hashOf(slot int) uint64 { return maphash.Comparable(st.seed, st.at(slot).key) }

// each calls yield with every entry until it returns false, and reports whether it did
// not.
func (st *stripe[E, S]) each(yield func(types.NamespacedName, *E) bool) bool {
	for s := 0; s < st.used; s++ {
		if *st.gen(s)&usedBit != 0 && !yield(st.at(s).key, &st.at(s).val) {
			return false
		}
	}
	return true
}
