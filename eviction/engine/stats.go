package engine

import (
	"cmp"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Stats counts an Engine's evictions by where they stand, as [Engine.Stats] reports them:
// what metrics read, at a cost that does not grow with the evictions.
type Stats struct {
	// Scheduled evictions wait for their deadline, or are due and wait for an act worker.
	Scheduled int
	// Delayed evictions are due and wait at a budget, by the reason reported to
	// [Observer.Delayed] ([ReasonRateLimited], [ReasonPaused], [ReasonInFlight],
	// [ReasonNamespaceLimit], [ReasonOwnerLimit], [ReasonRecreated], [ReasonUnconfirmed]).
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

// Pending returns the open evictions that wait: scheduled, delayed or retrying, as
// [Engine.Pending] lists them.
func (s Stats) Pending() int {
	n := s.Scheduled + s.Retrying
	for _, d := range s.Delayed {
		n += d
	}
	return n
}

// kept returns the evictions the Engine keeps: open, being closed, and acted on.
func (s Stats) kept() int { return s.Pending() + s.Running + s.Acted }

// Stats returns the Engine's counts. It reads counters, O(1) in the evictions (and O(the
// reasons) for Delayed), so that a metrics scrape costs the same at a million evictions as
// at none. It is safe for concurrent use; counts read while evictions move between states
// may be one off each other.
func (e *Engine[T]) Stats() Stats {
	s := Stats{
		Scheduled:    int(e.stats.n[scheduled].Load()),
		Retrying:     int(e.stats.n[retrying].Load()),
		Running:      int(e.stats.n[running].Load() + e.stats.n[closing].Load()),
		Acted:        int(e.stats.n[acted].Load()),
		SourceErrors: e.stats.sourceErrors.Load(),
		Delayed:      map[Reason]int{},
	}
	for i, r := range delayReasons {
		if n := e.stats.delayed[i].Load(); n != 0 {
			s.Delayed[r] = int(n)
		}
	}
	return s
}

// counters count the evictions in each state, and those held by each reason; the
// transitions of eviction.go move them.
type counters struct {
	n              [nStates]atomic.Int64
	delayed        [len(delayReasons)]atomic.Int64
	sourceErrors   atomic.Uint64
	badTransitions atomic.Uint64 // transitions from a state their row does not leave from
}

// delayReasons are the reasons an eviction is held for, in the order counters keep them.
var delayReasons = [...]Reason{ReasonRateLimited, ReasonPaused, ReasonInFlight, ReasonNamespaceLimit,
	ReasonOwnerLimit, ReasonRecreated, ReasonUnconfirmed, ReasonNotSynced}

// delay counts d more evictions held for reason.
func (c *counters) delay(reason Reason, d int64) {
	if i := slices.Index(delayReasons[:], reason); i >= 0 {
		c.delayed[i].Add(d)
	}
}

// kept returns the evictions the Engine keeps: open, running, being closed, or acted on.
// It reads only the counters, so that a budget may ask it under the gate's lock.
func (c *counters) kept() int {
	var n int64
	for s := scheduled; s < nStates; s++ {
		n += c.n[s].Load()
	}
	return int(n)
}

// moved counts an eviction that went from state from to state to.
func (c *counters) moved(from, to state) {
	if from != to {
		c.n[from].Add(-1)
		c.n[to].Add(1)
	}
}

// Pending is one open eviction that waits, as [Engine.Pending] reports it.
type Pending struct {
	Target Ref
	// At is when the target is due; at or before now for an eviction that is due, waits to
	// retry, or waits at a budget (then it is when the Engine found it due). An eviction
	// whose Actuator call is running is not pending, and not listed.
	At time.Time
	// Delayed is why an eviction that is due waits at a budget (see [Stats].Delayed);
	// empty when it does not.
	Delayed Reason
}

// PendingOf returns the open eviction of the target key, as Pending lists it, when it waits;
// false when the target has none that waits (none open, or its call runs now). It looks at
// that target alone, under its lock: O(1), for a person or a tool asking about one target.
func (e *Engine[T]) PendingOf(key types.NamespacedName) (Pending, bool) {
	st := e.store.lock(key)
	defer st.unlock()
	ev := st.evictions[key]
	if ev == nil {
		return Pending{}, false
	}
	return e.pendingOf(key, ev, e.clock.Now().Location())
}

// pendingOf returns the eviction ev of key as Pending lists it, if it waits.
func (e *Engine[T]) pendingOf(key types.NamespacedName, ev *eviction, loc *time.Location) (Pending, bool) {
	if ev.state != scheduled && ev.state != held && ev.state != retrying {
		return Pending{}, false
	}
	p := Pending{Target: Ref{Namespace: key.Namespace, Name: key.Name, UID: ev.uid, Holder: ev.holder}, At: nanosTime(ev.due, loc)}
	if ev.x != nil && ev.x.hold != nil {
		p.At = nanosTime(e.gate.Due(ev.x.hold), loc) // when it fell due
	}
	if ev.state == held {
		p.Delayed = ev.x.heldFor
	}
	return p, true
}

// Pending returns the open evictions that wait, earliest first (ties by key): what will be
// acted on, and when, in the location of the clock's time. It looks at every eviction,
// under its stripe's lock, O(n): it is meant for previews, debugging and simulations;
// metrics read [Engine.Stats].
func (e *Engine[T]) Pending() []Pending {
	loc := e.clock.Now().Location()
	var out []Pending
	for i := range e.store.stripes {
		st := &e.store.stripes[i]
		st.lock <- struct{}{}
		for key, ev := range st.evictions {
			if p, ok := e.pendingOf(key, ev, loc); ok {
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
