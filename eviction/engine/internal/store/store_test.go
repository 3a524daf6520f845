package store

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func key(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", i%7), Name: fmt.Sprintf("pod-%d", i)}
}

// TestStoreAgainstAMap puts, finds and drops random keys, and checks the Store against a
// map after every step: the entries, their IDs (stable while an entry lives, stale after),
// and what All yields.
func TestStoreAgainstAMap(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys int
		ops  int
	}{
		{"few keys, many reuses", 40, 20000},
		{"many keys, stripes that grow and empty", 5000, 60000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New[int, struct{}](nil, nil)
			want := map[types.NamespacedName]int{}
			ids := map[types.NamespacedName]ID{}
			var stale []ID
			r := rand.New(rand.NewPCG(1, 2))
			for op := range tc.ops {
				k := key(r.IntN(tc.keys))
				l := s.Lock(k)
				v, id := l.Get()
				wv, ok := want[k]
				switch {
				case ok != (v != nil):
					t.Fatalf("op %d: Get(%v) found %v, want %v", op, k, v != nil, ok)
				case ok && (*v != wv || id != ids[k]):
					t.Fatalf("op %d: Get(%v) = %d, %x, want %d, %x", op, k, *v, id, wv, ids[k])
				}
				if ok && r.IntN(2) == 0 {
					l.Drop(id)
					delete(want, k)
					delete(ids, k)
					stale = append(stale, id)
				} else {
					v, id = l.Put()
					*v = op
					want[k], ids[k] = op, id
				}
				l.Unlock()
			}
			got := map[types.NamespacedName]int{}
			for k, v := range s.All() {
				got[k] = *v
			}
			if len(got) != len(want) {
				t.Fatalf("All yields %d entries, want %d", len(got), len(want))
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("All: %v = %d, want %d", k, got[k], v)
				}
				l, e := s.LockID(ids[k])
				if e == nil || *e != v || l.Key() != k {
					t.Errorf("LockID(%x) = %v, %v, want %v, %d", ids[k], l.Key(), e, k, v)
				}
				l.Unlock()
			}
			for _, id := range stale {
				l, e := s.LockID(id)
				if e != nil {
					t.Errorf("LockID(%x) of a dropped entry found %v", id, l.Key())
				}
				l.Unlock()
			}
		})
	}
}

// TestStoreEmptiedStripeForgetsItsStorage: a stripe that empties lets its pages and index
// go (but for the page and small index of one that held few keys), and an ID from before
// stays stale after its slot number is handed out again.
func TestStoreEmptiedStripeForgetsItsStorage(t *testing.T) {
	s := New[int, struct{}](nil, nil)
	var old []ID
	for i := range 20000 {
		l := s.Lock(key(i))
		_, id := l.Put()
		old = append(old, id)
		l.Unlock()
	}
	for i, id := range old {
		l := s.Lock(key(i))
		l.Drop(id)
		l.Unlock()
	}
	// A stripe that held few keys keeps the little storage they took (remove compacts only
	// a table larger than 4*minTable): which stripes held few depends on the hash's random
	// seed, so every one is held to that bound, and the larger ones to nothing.
	for i := range s.stripes {
		if st := &s.stripes[i]; len(st.pages) > 1 || len(st.table) > 4*minTable {
			t.Fatalf("stripe %d keeps %d pages and a table of %d after emptying, want at most 1 and %d", i, len(st.pages), len(st.table), 4*minTable)
		}
	}
	for i := range 20000 {
		l := s.Lock(key(i + 1e6))
		l.Put()
		l.Unlock()
	}
	for _, id := range old {
		if l, e := s.LockID(id); e != nil {
			t.Fatalf("LockID(%x) from before the stripe emptied found %v", id, l.Key())
		} else {
			l.Unlock()
		}
	}
}

func BenchmarkStorePutDrop(b *testing.B) {
	s := New[[64]byte, struct{}](nil, nil)
	keys := make([]types.NamespacedName, 1<<16)
	for i := range keys {
		keys[i] = key(i)
	}
	for i := range keys[:1<<15] {
		l := s.Lock(keys[i])
		l.Put()
		l.Unlock()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := keys[(i+1<<15)&(1<<16-1)]
		l := s.Lock(k)
		l.Put()
		l.Unlock()
		k = keys[i&(1<<16-1)]
		l = s.Lock(k)
		if _, id := l.Get(); id != 0 {
			l.Drop(id)
		}
		l.Unlock()
	}
}

// mover records the moves a compaction makes, and refuses to move the entries it is told
// to keep; the stripes it is told have thinned out wait for the test to compact them.
type mover struct {
	moved   map[ID]ID
	keep    map[int]bool // entry values that may not move
	thinned map[int]bool
}

func (m *mover) Thinned(stripe int) { m.thinned[stripe] = true }

func (m *mover) CanMove(e *int) bool { return !m.keep[*e] }

func (m *mover) Moved(from, to ID, e *int) { m.moved[from] = to }

// TestStoreCompacts: a stripe whose entries fall below two thirds of its slots moves them
// into smaller storage, telling the mover of each move: the old IDs go stale, the new ones
// name the same entries; an entry that may not move holds the compaction back.
func TestStoreCompacts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keep    bool
		compact bool
	}{
		{"every entry may move", false, true},
		{"one entry may not move", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &mover{moved: map[ID]ID{}, keep: map[int]bool{}, thinned: map[int]bool{}}
			s := New[int, struct{}](nil, m)
			ids := map[int]ID{}
			for i := range 100000 {
				l := s.Lock(key(i))
				v, id := l.Put()
				*v, ids[i] = i, id
				l.Unlock()
			}
			if tc.keep {
				for i := 0; i < 100000; i += 2 {
					m.keep[i] = true // one in each stripe, surely
				}
			}
			for i := range 100000 {
				if i%4 != 0 { // drop three quarters, by their IDs of now
					l := s.Lock(key(i))
					_, id := l.Get()
					l.Drop(id)
					l.Unlock()
					delete(ids, i)
				}
			}
			if len(m.moved) != 0 || len(m.thinned) == 0 {
				t.Fatalf("before Compact: moved %d entries, %d stripes told thinned; want none moved, some told", len(m.moved), len(m.thinned))
			}
			for stripe := range m.thinned {
				delete(m.thinned, stripe)
				if got := s.Compact(stripe); got != tc.compact {
					t.Fatalf("Compact(%d) = %v, want %v", stripe, got, tc.compact)
				}
			}
			if !tc.compact && len(m.thinned) == 0 {
				t.Errorf("a compaction that could not move every entry did not tell the mover to try again")
			}
			if got := len(m.moved) > 0; got != tc.compact {
				t.Fatalf("moved %d entries, want a compaction %v", len(m.moved), tc.compact)
			}
			for i, id := range ids {
				for { // an entry may have moved more than once
					to, ok := m.moved[id]
					if !ok {
						break
					}
					id = to
				}
				l, e := s.LockID(id)
				if e == nil || *e != i || l.Key() != key(i) {
					t.Fatalf("entry %d: LockID(%x) = %v, %v", i, id, l.Key(), e)
				}
				l.Unlock()
			}
			for from := range m.moved {
				if l, e := s.LockID(from); e != nil {
					t.Fatalf("LockID(%x) of storage let go found %v", from, l.Key())
				} else {
					l.Unlock()
				}
			}
			slots := 0
			for i := range s.stripes {
				slots += s.stripes[i].used
			}
			if tc.compact && slots > 2*len(ids) {
				t.Errorf("%d slots for %d entries after the compaction, want fewer than twice as many", slots, len(ids))
			}
		})
	}
}
