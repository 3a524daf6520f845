package engine

import (
	"hash/maphash"

	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine/internal/budget"
)

// stripeCount is well above the goroutines that decide at once, so that unrelated targets
// seldom wait for each other.
const stripeCount = 256

// store holds every target's eviction, at most one per key, in the map of its key's stripe,
// under whose lock all about it is done. Make one with newStore.
type store struct {
	seed    maphash.Seed
	stripes [stripeCount]stripe
}

// stripe is one lock and what it guards. The lock is a channel of capacity one, not a
// sync.Mutex, so that a goroutine waiting for it is durably blocked to testing/synctest.
type stripe struct {
	lock      chan struct{}
	evictions map[types.NamespacedName]*eviction
	peak      int // the most evictions held since the map was last made
	scratch   scratch
}

// scratch is what a decision under a stripe's lock reuses, so that it allocates nothing.
type scratch struct {
	view   view
	causes []budget.Cause
	req    budget.Request
}

func newStore() *store {
	s := &store{seed: maphash.MakeSeed()}
	for i := range s.stripes {
		st := &s.stripes[i]
		st.lock = make(chan struct{}, 1)
		st.evictions = map[types.NamespacedName]*eviction{}
		// Room for two bindings: most targets have one or two.
		st.scratch.view.target.Bindings = make([]Binding, 0, 2)
		st.scratch.view.holders = make([]holderView, 0, 2)
	}
	return s
}

func (s *store) lock(key types.NamespacedName) *stripe {
	st := &s.stripes[maphash.Comparable(s.seed, key)%stripeCount]
	st.lock <- struct{}{}
	return st
}

func (st *stripe) unlock() { <-st.lock }

func (st *stripe) put(key types.NamespacedName) *eviction {
	if ev := st.evictions[key]; ev != nil {
		return ev
	}
	ev := &eviction{key: key}
	st.evictions[key] = ev
	st.peak = max(st.peak, len(st.evictions))
	return ev
}

// drop forgets ev. A Go map never gives back its storage, so the map is made anew once it
// holds less than a quarter of the most it held: an outage's storage goes with it.
func (st *stripe) drop(ev *eviction) {
	delete(st.evictions, ev.key)
	if st.peak >= 64 && len(st.evictions) < st.peak/4 {
		m := make(map[types.NamespacedName]*eviction, len(st.evictions))
		for k, v := range st.evictions { // not maps.Clone, which keeps the capacity
			m[k] = v
		}
		st.evictions, st.peak = m, len(m)
	}
}
