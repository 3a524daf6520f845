package timedqueue

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestIndexAgainstMap drives the index and a map with the same random puts and removes,
// with few distinct keys so that probe runs collide and wrap, and checks every key after
// every operation.
//
// With distLimit 1 an entry keeps only distance 0: every other home is found by hashing
// the key again, the path that entries more than 30 buckets from home take.
func TestIndexAgainstMap(t *testing.T) {
	for _, tc := range indexCases([]int{5, 100, 5000}) {
		t.Run(tc.name, func(t *testing.T) {
			keys := tc.keys
			rng := rand.New(rand.NewPCG(1, uint64(keys)))
			var slots slotTable[string, int]
			x := newIndex(&slots, 0)
			x.distLimit = tc.distLimit
			x.alloc(0)
			want := map[string]int32{}
			names := make([]string, keys)
			for i := range names {
				names[i] = fmt.Sprint("ns/pod-", i)
			}
			for op := range 20 * keys {
				k := names[rng.IntN(keys)]
				if _, ok := want[k]; ok {
					x.remove(want[k], x.hash(k))
					delete(want, k)
				} else {
					s := slots.add()
					*slots.at(s) = slot[string, int]{key: k, state: inUse}
					x.put(k, s)
					want[k] = s
				}
				if got := x.len(); got != len(want) {
					t.Fatalf("op %d: len: got %d, want %d", op, got, len(want))
				}
				if op%97 == 0 || keys <= 100 {
					if err := x.check(); err != nil {
						t.Fatalf("op %d: %v", op, err)
					}
				}
				if op%97 == 0 || keys <= 100 {
					for _, name := range names {
						got, ok := x.get(name)
						w, wok := want[name]
						if ok != wok || (ok && got != w) {
							t.Fatalf("op %d: get(%q): got %d %v, want %d %v", op, name, got, ok, w, wok)
						}
					}
				}
			}
		})
	}
}

type indexCase struct {
	name      string
	keys      int
	distLimit uint
}

// indexCases returns a case for each number of keys with the distances kept as usual, and
// one with distLimit 1.
func indexCases(keys []int) []indexCase {
	var cases []indexCase
	for _, limit := range []uint{0, 1} {
		for _, k := range keys {
			cases = append(cases, indexCase{fmt.Sprintf("keys=%d/distLimit=%d", k, limit), k, limit})
		}
	}
	return cases
}

// TestIndexWrapsAround fills the smallest table to the most it holds before growing (6 of 8
// buckets, so probe runs are long and often cross its end), removes keys from the middle of
// runs and checks that the others are still found.
func TestIndexWrapsAround(t *testing.T) {
	var slots slotTable[int, int]
	x := newIndex(&slots, 0)
	for i := range 6 { // 6 of 8 buckets: the most before it grows
		*slots.at(slots.add()) = slot[int, int]{key: i, state: inUse}
		x.put(i, int32(i))
	}
	if got, want := len(x.table), minIndexSize; got != want {
		t.Fatalf("table size: got %d, want %d", got, want)
	}
	for _, k := range []int{0, 3, 5} {
		x.remove(int32(k), x.hash(k))
	}
	for i := range 6 {
		s, ok := x.get(i)
		removed := i == 0 || i == 3 || i == 5
		if ok == removed || (ok && s != int32(i)) {
			t.Errorf("get(%d): got %d %v, want present=%v", i, s, ok, !removed)
		}
	}
	*slots.at(slots.add()) = slot[int, int]{key: 6, state: inUse}
	x.put(6, 6)
	if s, ok := x.get(6); !ok || s != 6 {
		t.Errorf("get(6) after refill: got %d %v, want 6 true", s, ok)
	}
}

// TestIndexSweep drives the index with random puts, removes and retirements against a map,
// and sweeps now and then: the keys of retired slots are never found, a sweep frees exactly
// the retired slots, each once, and every key in use is still found after it. Few keys in a
// small table make probe runs collide and wrap around the table's end.
func TestIndexSweep(t *testing.T) {
	for _, tc := range indexCases([]int{6, 100, 3000}) {
		t.Run(tc.name, func(t *testing.T) {
			keys := tc.keys
			rng := rand.New(rand.NewPCG(3, uint64(keys)))
			var slots slotTable[int, int]
			var free []int32
			x := newIndex(&slots, 0)
			x.distLimit = tc.distLimit
			x.alloc(0)
			want := map[int]int32{}
			retiredSet := map[int32]bool{}
			for op := range 30 * keys {
				k := rng.IntN(keys)
				s, ok := want[k]
				switch {
				case ok && rng.IntN(2) == 0:
					x.remove(s, x.hash(k))
					*slots.at(s) = slot[int, int]{}
					free = append(free, s)
					delete(want, k)
				case ok:
					slots.at(s).state = retired // it keeps its key, as retire does, until the sweep
					x.retire()
					retiredSet[s] = true
					delete(want, k)
				default:
					if len(free) == 0 {
						free = append(free, slots.add())
					}
					s = free[len(free)-1]
					free = free[:len(free)-1]
					*slots.at(s) = slot[int, int]{key: k, state: inUse}
					x.put(k, s)
					want[k] = s
				}
				if rng.IntN(keys/4+1) == 0 || x.full() {
					freed := map[int32]bool{}
					x.sweep(func(s int32) {
						if !retiredSet[s] || freed[s] {
							t.Fatalf("op %d: sweep freed slot %d: retired %v, freed before %v", op, s, retiredSet[s], freed[s])
						}
						freed[s] = true
						*slots.at(s) = slot[int, int]{}
						free = append(free, s)
					})
					if len(freed) != len(retiredSet) || x.retired != 0 {
						t.Fatalf("op %d: sweep freed %d slots of %d retired, %d left", op, len(freed), len(retiredSet), x.retired)
					}
					clear(retiredSet)
				}
				for name := range keys {
					if keys > 100 && op%97 != 0 {
						break
					}
					got, ok := x.get(name)
					w, wok := want[name]
					if ok != wok || (ok && got != w) {
						t.Fatalf("op %d: get(%d): got %d %v, want %d %v", op, name, got, ok, w, wok)
					}
				}
				if op%97 == 0 || keys <= 100 {
					if err := x.check(); err != nil {
						t.Fatalf("op %d: %v", op, err)
					}
				}
				if x.len() != len(want) || x.retired != len(retiredSet) {
					t.Fatalf("op %d: len %d, retired %d: want %d, %d", op, x.len(), x.retired, len(want), len(retiredSet))
				}
			}
		})
	}
}

// check verifies every entry: it names a slot there is, its tag is its key's, its distance
// is its distance from its home (or not kept, when too far), and no empty bucket lies
// between its home and it, so that a probe for its key reaches it.
func (x *index[K, V]) check() error {
	for i, e := range x.table {
		if e == 0 {
			continue
		}
		s := x.slotOf(e)
		if int(s) >= x.slots.len() || s < 0 {
			return fmt.Errorf("bucket %d names slot %d of %d", i, s, x.slots.len())
		}
		h := x.hash(x.slots.at(s).key)
		tagShift := x.slotBits + x.distBits
		if got, want := uint64(e)>>tagShift, uint64(x.tag(h))>>tagShift; got != want {
			return fmt.Errorf("bucket %d (slot %d): tag %#x, want %#x", i, s, got, want)
		}
		home := h & x.mask
		dist := (uint64(i) - home) & x.mask
		if got, want := e>>x.slotBits&x.farDist(), uint32(min(dist, uint64(x.farDist()))); got != want {
			return fmt.Errorf("bucket %d (slot %d): distance field %d, want %d", i, s, got, want)
		}
		for j := home; j != uint64(i); j = (j + 1) & x.mask {
			if x.table[j] == 0 {
				return fmt.Errorf("bucket %d (slot %d): empty bucket %d after its home %d", i, s, j, home)
			}
		}
	}
	return nil
}
