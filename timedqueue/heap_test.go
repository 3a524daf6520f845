package timedqueue

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestHeapRandom runs random pushes, pops, removals and moves against a sorted slice.
func TestHeapRandom(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spread int64 // deadlines are drawn from [0, spread): small spreads make many ties
	}{
		{"many ties", 4},
		{"few ties", 1 << 40},
		{"extremes", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tc.spread)))
			draw := func() int64 {
				if tc.spread == 0 {
					return []int64{zeroNanos, minNanos, -1, 0, 1, maxNanos}[r.IntN(6)]
				}
				return r.Int64N(tc.spread)
			}
			var h entryHeap[int, int]
			var seq uint64
			for op := range 5000 {
				switch x := r.IntN(10); {
				case len(h) == 0 || x < 5:
					seq++
					h.push(&entry[int, int]{key: op, at: draw(), seq: seq})
				case x < 7:
					want := slices.MinFunc(h, byDue)
					if got := h.remove(0); got != want || got.index != -1 {
						t.Fatalf("op %d: pop: got key %d (index %d), want key %d", op, got.key, got.index, want.key)
					}
				case x < 8:
					h.remove(r.IntN(len(h)))
				default:
					i := r.IntN(len(h))
					seq++
					h[i].at, h[i].seq = draw(), seq
					h.fix(i)
				}
				checkHeap(t, op, h)
			}
		})
	}
}

func byDue(a, b *entry[int, int]) int {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq))
}

// checkHeap verifies the heap's order and that each entry holds its index.
func checkHeap(t *testing.T, op int, h entryHeap[int, int]) {
	t.Helper()
	for i, e := range h {
		if int(e.index) != i {
			t.Fatalf("op %d: the entry at %d holds index %d", op, i, e.index)
		}
		if p := (i - 1) / 4; i > 0 && e.before(h[p]) {
			t.Fatalf("op %d: the entry at %d is due before its parent at %d", op, i, p)
		}
	}
}
