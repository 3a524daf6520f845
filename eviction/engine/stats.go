package engine

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Stats counts an Engine's evictions by where they stand, as [Engine.Stats] reports them.
type Stats struct {
	// Scheduled evictions wait for their deadline, or are due and wait for an act worker.
	Scheduled int
	// Delayed evictions are due and wait at a budget, by the reason [Observer.Delayed] gave.
	Delayed map[Reason]int
	// Retrying evictions wait for the retry of a failed call.
	Retrying int
	// Running evictions are in an Actuator call (or being closed while one runs).
	Running int
	// Acted are the targets acted on whose removal (or move) the Source has not shown yet.
	Acted int
	// SourceErrors counts the lookups of the Source that failed, since New.
	SourceErrors uint64
}

// Pending returns the open evictions that wait, those [Engine.Pending] lists.
func (s Stats) Pending() int {
	n := s.Scheduled + s.Retrying
	for _, d := range s.Delayed {
		n += d
	}
	return n
}

// Stats returns the Engine's counts, for metrics: O(1) in the evictions (O(the reasons) for
// Delayed). Counts read while evictions move may be one off each other.
func (e *Engine[T]) Stats() Stats {
	s := Stats{
		Scheduled:    int(e.stats.n[scheduled].Load()),
		Retrying:     int(e.stats.n[retrying].Load()),
		Running:      int(e.stats.n[running].Load() + e.stats.n[closing].Load()),
		Acted:        int(e.stats.n[acted].Load()),
		SourceErrors: e.stats.sourceErrors.Load(),
		Delayed:      map[Reason]int{},
	}
	e.stats.mu.Lock()
	for r, n := range e.stats.delayed {
		s.Delayed[r] = int(n)
	}
	e.stats.mu.Unlock()
	return s
}

// counters count the evictions in each state and held for each reason.
type counters struct {
	n              [nStates]atomic.Int64
	sourceErrors   atomic.Uint64
	badTransitions atomic.Uint64

	mu      sync.Mutex       // guards delayed, a leaf lock
	delayed map[Reason]int64 // the held evictions by reason, of any budget; none at 0
}

func (c *counters) delay(reason Reason, d int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.delayed == nil {
		c.delayed = map[Reason]int64{}
	}
	if c.delayed[reason] += d; c.delayed[reason] == 0 {
		delete(c.delayed, reason)
	}
}

// kept returns the evictions kept: open, closing or acted.
func (c *counters) kept() int {
	var n int64
	for s := scheduled; s < nStates; s++ {
		n += c.n[s].Load()
	}
	return int(n)
}

func (c *counters) moved(from, to state) {
	if from != to {
		c.n[from].Add(-1)
		c.n[to].Add(1)
	}
}

// Pending is one open eviction that waits (not one whose call runs), as [Engine.Pending]
// lists it.
type Pending struct {
	Target Ref
	// At is when the target is due: at or before now for one due, retrying, or waiting at a
	// budget (then when the Engine found it due).
	At time.Time
	// Delayed is why a due eviction waits at a budget; empty when it does not.
	Delayed Reason
}

// PendingOf returns the target key's eviction as Pending lists it, or false if it has none
// that waits, in O(1).
func (e *Engine[T]) PendingOf(key types.NamespacedName) (Pending, bool) {
	st := e.store.lock(key)
	defer st.unlock()
	ev := st.evictions[key]
	if ev == nil {
		return Pending{}, false
	}
	return e.pendingOf(ev, e.clock.Now().Location())
}

func (e *Engine[T]) pendingOf(ev *eviction, loc *time.Location) (Pending, bool) {
	if ev.state != scheduled && ev.state != held && ev.state != retrying {
		return Pending{}, false
	}
	p := Pending{Target: ev.ref(), At: nanosTime(ev.due, loc)}
	if ev.x != nil && ev.x.hold != nil {
		p.At = nanosTime(e.gate.Due(ev.x.hold), loc) // when it fell due
	}
	if ev.state == held {
		p.Delayed = ev.x.heldFor
	}
	return p, true
}

// Pending returns the open evictions that wait, earliest first (ties by key), in the
// clock's location. It looks at every eviction, O(n): for previews, debugging and
// simulations; metrics read [Engine.Stats].
func (e *Engine[T]) Pending() []Pending {
	loc := e.clock.Now().Location()
	var out []Pending
	for i := range e.store.stripes {
		st := &e.store.stripes[i]
		st.lock <- struct{}{}
		for _, ev := range st.evictions {
			if p, ok := e.pendingOf(ev, loc); ok {
				out = append(out, p)
			}
		}
		st.unlock()
	}
	slices.SortFunc(out, func(a, b Pending) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Target.Namespace, b.Target.Namespace), cmp.Compare(a.Target.Name, b.Target.Name))
	})
	return out
}
