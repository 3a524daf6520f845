package intake

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// drain takes every key of f, in order, with its payload.
func drain(f *fifo[int, string]) (keys []int, payloads []string) {
	for {
		k, v, ok := f.take()
		if !ok {
			return keys, payloads
		}
		keys, payloads = append(keys, k), append(payloads, v)
	}
}

func TestFifoOrder(t *testing.T) {
	tests := []struct {
		name         string
		run          func(f *fifo[int, string])
		wantKeys     []int
		wantPayloads []string
	}{
		{"empty", func(*fifo[int, string]) {}, nil, nil},
		{"arrival order", func(f *fifo[int, string]) {
			f.put(3, "a")
			f.put(1, "b")
			f.put(2, "c")
		}, []int{3, 1, 2}, []string{"a", "b", "c"}},
		{"a key queued again keeps its place and takes the new payload", func(f *fifo[int, string]) {
			f.put(1, "old")
			f.put(2, "b")
			f.put(1, "new")
		}, []int{1, 2}, []string{"new", "b"}},
		{"a key taken and queued again goes to the end", func(f *fifo[int, string]) {
			f.put(1, "a")
			f.put(2, "b")
			f.take()
			f.put(1, "c")
		}, []int{2, 1}, []string{"b", "c"}},
		{"the slots of taken keys are reclaimed while more come", func(f *fifo[int, string]) {
			for i := range 12 {
				f.put(i, "")
			}
			for range 10 { // the 6th and the 9th take move the waiting keys to the front
				f.take()
			}
			for i := 12; i < 40; i++ {
				f.put(i, "")
			}
		}, seq(10, 40), nil},
		{"a key queued again after the waiting keys moved keeps its place", func(f *fifo[int, string]) {
			for i := range 4 {
				f.put(i, "a")
			}
			f.take()
			f.take() // moves 2 and 3 to the front
			f.put(2, "b")
			f.put(4, "c")
		}, []int{2, 3, 4}, []string{"b", "a", "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f fifo[int, string]
			tc.run(&f)
			if got, want := len(f.items), len(tc.wantKeys); got != want {
				t.Errorf("len: got %d, want %d", got, want)
			}
			keys, payloads := drain(&f)
			if !slices.Equal(keys, tc.wantKeys) {
				t.Errorf("keys: got %v, want %v", keys, tc.wantKeys)
			}
			if tc.wantPayloads != nil && !slices.Equal(payloads, tc.wantPayloads) {
				t.Errorf("payloads: got %q, want %q", payloads, tc.wantPayloads)
			}
			if len(f.items) != 0 {
				t.Errorf("len after draining: got %d, want 0", len(f.items))
			}
		})
	}
}

// TestFifoStorage: a fifo that never empties, as in a busy spell of updates, reuses the
// slots of the keys taken and allocates nothing once it has grown; a burst of up to 1024
// keys reuses the storage of the one before it; the storage of a larger burst is let go
// once the fifo is empty. The keys are pod keys, whose hashes fill the map as an outage's
// do.
func TestFifoStorage(t *testing.T) {
	keys := make([]types.NamespacedName, 2000)
	for i := range keys {
		keys[i] = types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", i%7), Name: fmt.Sprintf("pod-%d", i)}
	}
	var f fifo[types.NamespacedName, int]
	next := 0
	busy := func() { // 100 keys queued all along; each new key is put as one is taken
		for range 5 * len(keys) {
			f.put(keys[next%len(keys)], 0)
			next++
			f.take()
		}
	}
	for _, k := range keys[:100] {
		f.put(k, 0)
	}
	next = 100
	busy()
	if allocs := testing.AllocsPerRun(5, busy); allocs != 0 {
		t.Errorf("a busy spell of %d puts with 100 keys queued: got %v allocations, want 0", 5*len(keys), allocs)
	}
	// The slice holds at most twice the keys waiting, 201, in a capacity append doubles.
	if n := cap(f.keys); n > 4*100 {
		t.Errorf("a slice of %d slots for 100 keys queued, want at most 400", n)
	}

	cycle := func(n int) {
		for _, k := range keys[:n] {
			f.put(k, 0)
		}
		for _, _, ok := f.take(); ok; _, _, ok = f.take() {
		}
	}
	cycle(1024)
	if f.keys == nil || f.items == nil {
		t.Fatalf("after a burst of 1024: the storage was let go, want it kept")
	}
	if allocs := testing.AllocsPerRun(10, func() { cycle(1024) }); allocs != 0 {
		t.Errorf("bursts of 1024 again: got %v allocations per burst, want 0", allocs)
	}
	cycle(1025)
	if f.keys != nil || f.items != nil {
		t.Errorf("after a burst of 1025: kept %d slots, want none", cap(f.keys))
	}
}

func seq(from, to int) []int {
	s := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}
