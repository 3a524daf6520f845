package timedqueue

import (
	"hash/maphash"
	"math/bits"
)

// index finds a key's slot. It is an open-addressing hash table with linear probing and
// backward-shift deletion whose entries are 4 bytes: the slot number in the low bits, then
// how far the entry sits from its home bucket, then a tag made of other bits of the key's
// hash. That is about 5 to 11 bytes a key, against about 56 for a map[K]int32 with string
// keys (which keeps a second copy of every key), and nothing for the collector to scan.
// The keys stay in the slots: a probe reads a slot only when the tag matches, which at a
// million keys is one probe in 128 that is not the key's own.
//
// The distance gives an entry's home when a deletion shifts entries back into its hole.
// Distances past the field's range, and homes in a larger table, are found by hashing the
// key again from its slot; that is why a retired slot keeps its key until a sweep deletes
// its entry.
type index[K comparable, V any] struct {
	seed  maphash.Seed
	slots *slotTable[K, V]
	table []uint32 // 0 is empty; else tag | distance<<slotBits | slot+1
	mask  uint64   // len(table)-1; len(table) is a power of two
	// slotBits is how many low bits of an entry hold slot+1: enough for every slot there
	// is, and more as the slots grow. The next distBits bits hold the distance from home,
	// or farDist(): not kept. The bits above are the tag: the hash's high half's bits, in
	// their places, disjoint from the low bits that pick the home bucket.
	slotBits, distBits uint
	// distLimit, when not 0, is the most bits the distance may have; only tests set it, to
	// make most distances too far to keep.
	distLimit uint
	n         int // entries of slots in use
	// retired counts the entries of retired slots: their keys are done, but their entries
	// stay until a sweep, so that finishing a key costs no probe of the table (in a large
	// drain each probe is a cache miss).
	retired int
}

const (
	minIndexSize = 8
	minSlotBits  = 8
	maxSlotBits  = 31 // slot numbers are int32: slot+1 fits in 31 bits
	maxDistBits  = 5  // distances up to 30 are kept: in a table at most 3/4 full, nearly all
)

func newIndex[K comparable, V any](slots *slotTable[K, V], size int) index[K, V] {
	x := index[K, V]{seed: maphash.MakeSeed(), slots: slots}
	x.alloc(size)
	return x
}

// alloc replaces the table with an empty one large enough for n keys, with room in its
// entries for the slots there are.
func (x *index[K, V]) alloc(n int) {
	size := max(minIndexSize, 1<<bits.Len(uint(n*4/3))) // keeps the load at most 3/4
	x.table = make([]uint32, size)
	x.mask = uint64(size - 1)
	x.setSlotBits(max(minSlotBits, uint(bits.Len(uint(x.slots.len())))))
	x.n, x.retired = 0, 0
}

// setSlotBits sets the layout of the entries for slot numbers of sb bits.
func (x *index[K, V]) setSlotBits(sb uint) {
	limit := uint(maxDistBits)
	if x.distLimit != 0 {
		limit = x.distLimit
	}
	x.slotBits, x.distBits = sb, min(limit, 32-sb)
}

func (x *index[K, V]) len() int { return x.n }

// slotOf returns the slot of entry e.
func (x *index[K, V]) slotOf(e uint32) int32 { return int32(e&(1<<x.slotBits-1)) - 1 }

// tag returns the tag bits of hash h, in place in an entry.
func (x *index[K, V]) tag(h uint64) uint32 {
	return uint32(h>>32) >> (x.slotBits + x.distBits) << (x.slotBits + x.distBits)
}

// farDist is the distance field's value for a distance it cannot hold.
func (x *index[K, V]) farDist() uint32 { return 1<<x.distBits - 1 }

// withDist returns entry e at distance d from its home.
func (x *index[K, V]) withDist(e uint32, d uint64) uint32 {
	far := x.farDist()
	field := uint32(min(d, uint64(far))) << x.slotBits
	return e&^(far<<x.slotBits) | field
}

// home returns the bucket where the probe for the key of entry e, which is in bucket i,
// starts.
func (x *index[K, V]) home(e uint32, i uint64) uint64 {
	if d := e >> x.slotBits & x.farDist(); d != x.farDist() {
		return (i - uint64(d)) & x.mask
	}
	return x.hash(x.slots.at(x.slotOf(e)).key) & x.mask
}

// lookup returns the bucket of key and true, or the empty bucket where the probe ended and
// false. h is the key's hash.
func (x *index[K, V]) lookup(key K, h uint64) (bucket uint64, ok bool) {
	tagShift := x.slotBits + x.distBits
	tag, slotMask := uint32(h>>32)>>tagShift, uint32(1)<<x.slotBits-1
	for i := h & x.mask; ; i = (i + 1) & x.mask {
		e := x.table[i]
		if e == 0 {
			return i, false
		}
		if e>>tagShift == tag {
			if s := x.slots.at(int32(e&slotMask) - 1); s.isUsed() && s.key == key {
				return i, true
			}
		}
	}
}

// hash returns key's hash. It may be called without the lock that guards the index: the
// seed never changes.
func (x *index[K, V]) hash(key K) uint64 { return maphash.Comparable(x.seed, key) }

// get returns key's slot.
func (x *index[K, V]) get(key K) (int32, bool) {
	i, ok := x.lookup(key, maphash.Comparable(x.seed, key))
	if !ok {
		return -1, false
	}
	return x.slotOf(x.table[i]), true
}

// put records that key, which is not in the index, is in slot s, one of the slots there are.
func (x *index[K, V]) put(key K, s int32) {
	for x.slots.len() >= 1<<x.slotBits && x.slotBits < maxSlotBits {
		x.widen()
	}
	if x.full() {
		x.grow()
	}
	h := maphash.Comparable(x.seed, key)
	x.insertEntry(h&x.mask, x.tag(h)|uint32(s+1))
	x.n++
}

// full reports whether one more entry would load the table above 3/4.
func (x *index[K, V]) full() bool { return (x.n+x.retired+1)*4 > len(x.table)*3 }

// widen gives slot numbers one more bit of every entry, when the slots have outgrown them:
// the distance moves up a bit, and the tag loses its lowest bit (or, once the tag is gone,
// the distance its highest). It moves no entry.
func (x *index[K, V]) widen() {
	oldSlot, oldDist := uint32(1)<<x.slotBits-1, x.farDist()
	oldShift := x.slotBits
	x.setSlotBits(x.slotBits + 1)
	tagShift := x.slotBits + x.distBits
	for i, e := range x.table {
		if e == 0 {
			continue
		}
		d := e >> oldShift & oldDist
		if d == oldDist {
			d = x.farDist()
		}
		ne := uint32(uint64(e)>>tagShift<<tagShift) | e&oldSlot
		x.table[i] = x.withDist(ne, uint64(d))
	}
}

// grow doubles the table, moving each entry to its home in the larger one, which takes
// hashing its key again: the entry holds one bit too few of the hash.
func (x *index[K, V]) grow() {
	old := x.table
	x.table = make([]uint32, 2*len(old))
	x.mask = uint64(len(x.table) - 1)
	for _, e := range old {
		if e != 0 {
			h := x.hash(x.slots.at(x.slotOf(e)).key)
			x.insertEntry(h&x.mask, e)
		}
	}
}

// insertEntry puts e in the first empty bucket from home on, with its distance from home.
func (x *index[K, V]) insertEntry(home uint64, e uint32) {
	i := home
	for x.table[i] != 0 {
		i = (i + 1) & x.mask
	}
	x.table[i] = x.withDist(e, (i-home)&x.mask)
}

// remove deletes the entry of slot s, whose key's hash is h, from the index. It matches
// the slot number, not the key: a slot is in the index once, and comparing keys would read
// the key's bytes, a cache miss of its own for string keys.
func (x *index[K, V]) remove(s int32, h uint64) {
	want, slotMask := uint32(s+1), uint32(1)<<x.slotBits-1
	i := h & x.mask
	for x.table[i]&slotMask != want {
		if x.table[i] == 0 {
			return // not there
		}
		i = (i + 1) & x.mask
	}
	x.n--
	x.deleteAt(i)
}

// deleteAt empties bucket i. Later entries of the probe run shift back into the hole.
func (x *index[K, V]) deleteAt(i uint64) {
	for j := (i + 1) & x.mask; ; j = (j + 1) & x.mask {
		e := x.table[j]
		if e == 0 {
			break
		}
		// The entry at j may move into the hole at i unless its home lies cyclically in
		// (i, j]: then it would end up before its home and never be found.
		if home := x.home(e, j); (j-home)&x.mask >= (j-i)&x.mask {
			x.table[i] = x.withDist(e, (i-home)&x.mask)
			i = j
		}
	}
	x.table[i] = 0
}

// retire records that the slot of one entry was retired (see retired).
func (x *index[K, V]) retire() { x.n--; x.retired++ }

// sweep deletes the entries of retired slots and calls freed with each of those slots. It
// scans the table once, from the bucket after an empty one, all around: an entry that a
// deletion shifts back only moves within its probe run, which ends at an empty bucket,
// so it never moves behind the scan. freed may drop the slot's key only once its entry is
// deleted, which it is when freed is called.
func (x *index[K, V]) sweep(freed func(slot int32)) {
	var z uint64
	for x.table[z] != 0 { // there is an empty bucket: the load is at most 3/4
		z++
	}
	i := (z + 1) & x.mask
	for left := len(x.table); left > 0; {
		e := x.table[i]
		if e != 0 && x.slots.at(x.slotOf(e)).isRetired() {
			x.deleteAt(i) // a later entry may have moved to i: look at it again
			x.retired--
			freed(x.slotOf(e))
			continue
		}
		i = (i + 1) & x.mask
		left--
	}
}

// rebuild empties the index, sized for n keys, to be filled again with put; it is how the
// index shrinks after a large drain.
func (x *index[K, V]) rebuild(n int) { x.alloc(n) }
