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
			s := New[int, struct{}](nil)
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
// go, and an ID from before stays stale after its slot number is handed out again.
func TestStoreEmptiedStripeForgetsItsStorage(t *testing.T) {
	s := New[int, struct{}](nil)
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
	for i := range s.stripes {
		if st := &s.stripes[i]; st.pages != nil || st.table != nil {
			t.Fatalf("stripe %d keeps %d pages and a table of %d after emptying", i, len(st.pages), len(st.table))
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
	s := New[[64]byte, struct{}](nil)
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
