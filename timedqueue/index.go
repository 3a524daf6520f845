package timedqueue

import (
	"hash/maphash"
	"math/bits"
)

// index finds a key's slot. It is an open-addressing hash table with linear probing and
// backward-shift deletion, holding for each key only its slot number and 32 bits of its
// hash in one uint64: about 11 to 21 bytes a key, against about 56 for a map[K]int32 with
// string keys (which keeps a second copy of every key), and nothing for the collector to
// scan. The keys themselves stay in the slots, where a probe whose hash bits match reads
// them to compare.
type index[K comparable, V any] struct {
	seed  maphash.Seed
	slots *[]slot[K, V]
	table []uint64 // 0 is empty; else (slot+1)<<32 | the low 32 bits of the key's hash
	mask  uint64   // len(table)-1; len(table) is a power of two
	n     int      // entries of slots in use
	// retired counts the entries of retired slots: their keys are done, but their entries
	// stay until a sweep, so that finishing a key costs no probe of the table (in a large
	// drain each probe is a cache miss).
	retired int
}

const minIndexSize = 8

func newIndex[K comparable, V any](slots *[]slot[K, V], size int) index[K, V] {
	x := index[K, V]{seed: maphash.MakeSeed(), slots: slots}
	x.alloc(size)
	return x
}

// alloc replaces the table with an empty one large enough for n keys.
func (x *index[K, V]) alloc(n int) {
	size := max(minIndexSize, 1<<bits.Len(uint(n*4/3))) // keeps the load at most 3/4
	x.table = make([]uint64, size)
	x.mask = uint64(size - 1)
	x.n, x.retired = 0, 0
}

func (x *index[K, V]) len() int { return x.n }

// lookup returns the bucket of key and true, or the empty bucket where the probe ended and
// false. h is the key's hash.
func (x *index[K, V]) lookup(key K, h uint64) (bucket uint64, ok bool) {
	frag := uint64(uint32(h))
	slots := *x.slots
	for i := h & x.mask; ; i = (i + 1) & x.mask {
		e := x.table[i]
		if e == 0 {
			return i, false
		}
		if s := &slots[e>>32-1]; e&0xffffffff == frag && s.key == key && s.state&inUse != 0 {
			return i, true
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
	return int32(x.table[i]>>32 - 1), true
}

// put records that key, which is not in the index, is in slot s.
func (x *index[K, V]) put(key K, s int32) {
	if x.full() {
		x.grow()
	}
	h := maphash.Comparable(x.seed, key)
	i, _ := x.lookup(key, h)
	x.table[i] = uint64(s+1)<<32 | uint64(uint32(h))
	x.n++
}

// full reports whether one more entry would load the table above 3/4.
func (x *index[K, V]) full() bool { return (x.n+x.retired+1)*4 > len(x.table)*3 }

// grow doubles the table. The hash bits kept in each entry give its new home without
// hashing the key again.
func (x *index[K, V]) grow() {
	old := x.table
	x.table = make([]uint64, 2*len(old))
	x.mask = uint64(len(x.table) - 1)
	for _, e := range old {
		if e != 0 {
			x.insertEntry(e)
		}
	}
}

func (x *index[K, V]) insertEntry(e uint64) {
	i := e & 0xffffffff & x.mask
	for x.table[i] != 0 {
		i = (i + 1) & x.mask
	}
	x.table[i] = e
}

// remove deletes the entry of slot s, whose key's hash is h, from the index. It matches
// the slot number, not the key: a slot is in the index once, and comparing keys would read
// the key's bytes, a cache miss of its own for string keys.
func (x *index[K, V]) remove(s int32, h uint64) {
	want := uint64(s+1)<<32 | uint64(uint32(h))
	i := h & x.mask
	for x.table[i] != want {
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
		home := e & 0xffffffff & x.mask
		if (j-home)&x.mask >= (j-i)&x.mask {
			x.table[i] = e
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
// so it never moves behind the scan.
func (x *index[K, V]) sweep(freed func(slot int32)) {
	var z uint64
	for x.table[z] != 0 { // there is an empty bucket: the load is at most 3/4
		z++
	}
	slots := *x.slots
	i := (z + 1) & x.mask
	for left := len(x.table); left > 0; {
		e := x.table[i]
		if e != 0 && slots[e>>32-1].state&retired != 0 {
			x.deleteAt(i) // a later entry may have moved to i: look at it again
			x.retired--
			freed(int32(e>>32 - 1))
			continue
		}
		i = (i + 1) & x.mask
		left--
	}
}

// rebuild empties the index, sized for n keys, to be filled again with put; it is how the
// index shrinks after a large drain.
func (x *index[K, V]) rebuild(n int) { x.alloc(n) }
