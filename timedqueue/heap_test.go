package timedqueue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// sortedItems returns items sorted by (at, seq), the heap's order, with sort.Slice.
func sortedItems(items []item) []item {
	s := slices.Clone(items)
	sort.Slice(s, func(i, j int) bool {
		return s[i].at < s[j].at || (s[i].at == s[j].at && s[i].seq < s[j].seq)
	})
	return s
}

func checkHeapOrder(t *testing.T, h itemHeap) {
	t.Helper()
	for i := 1; i < len(h); i++ {
		if p := (i - 1) / 4; h[i].less(h[p]) {
			t.Fatalf("heap order: item %d %+v sorts before its parent %d %+v", i, h[i], p, h[p])
		}
	}
}

// TestHeapRandom runs random pushes and pops against a sorted slice.
func TestHeapRandom(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spread int64 // deadlines are drawn from [0, spread): small spreads make many ties
		ops    int
	}{
		{"many ties", 4, 5000},
		{"few ties", 1 << 40, 5000},
		{"negative and extreme", 0, 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tc.spread)))
			var h itemHeap
			var model []item
			seq := uint32(0)
			draw := func() int64 {
				if tc.spread == 0 {
					return []int64{zeroNanos, minNanos, -1, 0, 1, maxNanos}[r.IntN(6)]
				}
				return r.Int64N(tc.spread)
			}
			for op := range tc.ops {
				if len(model) == 0 || r.IntN(3) > 0 {
					it := item{at: draw(), seq: seq, slot: int32(op)}
					seq++
					h.push(it)
					model = append(model, it)
				} else {
					model = sortedItems(model)
					got := h.pop()
					if got != model[0] {
						t.Fatalf("op %d: pop: got %+v, want %+v", op, got, model[0])
					}
					model = model[1:]
				}
				if len(h) != len(model) {
					t.Fatalf("op %d: len: got %d, want %d", op, len(h), len(model))
				}
			}
			checkHeapOrder(t, h)
			want := sortedItems(model)
			for i := range want {
				if got := h.pop(); got != want[i] {
					t.Fatalf("drain %d: pop: got %+v, want %+v", i, got, want[i])
				}
			}
			if len(h) != 0 {
				t.Fatalf("after draining: len %d, want 0", len(h))
			}
		})
	}
}

// TestHeapInit restores the order of random slices of every small size and some large ones.
func TestHeapInit(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	sizes := []int{0, 1, 2, 3, 4, 5, 6, 16, 17, 21, 22, 85, 86, 1000, 4097}
	for _, n := range sizes {
		for _, spread := range []int64{3, 1 << 50} {
			t.Run(fmt.Sprintf("n=%d/spread=%d", n, spread), func(t *testing.T) {
				items := make([]item, n)
				for i := range items {
					items[i] = item{at: r.Int64N(spread), seq: uint32(r.IntN(1 << 30)), slot: int32(i)}
				}
				h := itemHeap(slices.Clone(items))
				h.init()
				checkHeapOrder(t, h)
				for i, want := range sortedItems(items) {
					if got := h.pop(); got != want {
						t.Fatalf("pop %d: got %+v, want %+v", i, got, want)
					}
				}
			})
		}
	}
}

func TestItemLess(t *testing.T) {
	for _, tc := range []struct {
		a, b item
		want bool
	}{
		{item{at: 1, seq: 9}, item{at: 2, seq: 0}, true},
		{item{at: 2, seq: 0}, item{at: 1, seq: 9}, false},
		{item{at: 1, seq: 1}, item{at: 1, seq: 2}, true},
		{item{at: 1, seq: 2}, item{at: 1, seq: 1}, false},
		{item{at: 1, seq: 1}, item{at: 1, seq: 1}, false},
		{item{at: zeroNanos}, item{at: minNanos}, true},
	} {
		if got := tc.a.less(tc.b); got != tc.want {
			t.Errorf("%+v.less(%+v): got %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
