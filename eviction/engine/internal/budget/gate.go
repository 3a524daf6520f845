package budget

import (
	"cmp"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Cause is a NoExecute taint that makes an eviction due: its Key, on the holder named
// Holder, whose group is Group.
type Cause struct {
	Holder, Key, Group string
}

// Request is one eviction that is due, as the gate asks its budgets about it. The gate's
// caller fills it and may reuse it (and its Causes) once Admit or Release returns: a
// budget must not keep it.
type Request struct {
	// Key, UID and Holder name the target, its incarnation and the holder that made it due.
	Key    types.NamespacedName
	UID    types.UID
	Holder string
	// Causes are the taints that make it due; filled only when [Gate.NeedsCauses].
	Causes []Cause
	// Owner is the workload the target belongs to, as its Source says; zero for none.
	Owner Owner
	// Created is when the target was created (unix nanoseconds); 0 when not known.
	Created int64
	// Now is the time of the question, in unix nanoseconds of the caller's clock.
	Now int64
}

// Owner is the workload a target belongs to: a kind and a name, within the target's
// namespace. The zero Owner is none.
type Owner struct {
	Kind, Name string
}

// Scope names what holds evictions until it is released: a taint key paused by the brake,
// over all holders or within one group, a scope the caller's Census named, one eviction's
// place in a queue (Seq), or the wait for the caller's informers to sync. Budgets make
// their own, told apart by Kind.
type Scope struct {
	Kind    Kind
	Key     string
	Group   string
	Grouped bool
	Seq     uint64
}

// Kind tells apart the scopes of different budgets.
type Kind uint8

// The kinds of the budgets in this package.
const (
	KindBrake Kind = iota + 1
	KindInFlight
	KindConfirm
	KindSynced
)

// Verdict is one budget's answer about an eviction that is due.
type Verdict struct {
	// Wait is true when the eviction may not go yet.
	Wait bool
	// Until is when to ask again (unix nanoseconds); 0 with Wait means: when its Scope is
	// released (see [Gate.Wake]).
	Until int64
	// Scope is what holds it, when Until is 0.
	Scope Scope
	// Reason is why it waits, as the engine reports it: "RateLimited", "Paused".
	Reason string
}

// Go is the verdict of a budget that lets the eviction go.
var Go = Verdict{}

// Budget is one limit on evictions that are due. The [Gate] asks its budgets in order; the
// first that says wait decides, and the budgets after it are not asked (what they reserved
// for the eviction is released). A Budget is called under the gate's lock only: it needs no
// lock of its own for what only the gate calls.
type Budget interface {
	// NeedsCauses reports whether Admit reads Request.Causes.
	NeedsCauses() bool
	// Admit answers for the eviction r. state is what this budget kept for the eviction
	// from its last answer (nil at first); Admit returns the state to keep, which the
	// gate keeps in the eviction's [Hold] and gives back to Admit and Release.
	Admit(r *Request, state any) (Verdict, any)
	// Release gives back what state reserves, the eviction having left this budget
	// without going: cancelled, moved, or held by a budget before this one.
	Release(state any, now int64)
}

// Recorder is a budget that is told of each eviction every budget let go: one that counts
// the evictions of a span of time.
type Recorder interface {
	// Went: every budget let the eviction r go; its Actuator call comes next.
	Went(r *Request)
}

// Tracker is a budget that follows the evictions it let go until they end, as one that
// bounds the evictions in flight must. The gate's caller tells it of each end once, for
// an eviction that went.
type Tracker interface {
	Recorder
	// Ended: an eviction that went has ended: its target is gone or was moved (the Source
	// shows the action's effect), it is leaving past its GoneBy, or it was closed without
	// an action. It appends to released the scopes that may let evictions go now.
	Ended(now int64, released []Scope) []Scope
}

// Hold is what the gate keeps of an eviction that waits at it, for the caller to keep in
// the eviction and give back: when it fell due, what it waits for, and each budget's state.
// Its fields are guarded by the gate's lock.
type Hold struct {
	due    int64
	seq    uint64 // the order in which the holds were made, for ties of due
	scope  Scope  // while it waits for a scope, to be found by Wake; zero otherwise
	waits  bool   // it is in the gate's waiting set of scope
	states []any
}

// Decision is the gate's answer for an eviction that is due.
type Decision[E comparable] struct {
	// Wait is true when the eviction may not go yet; Until is when to look again, 0 for
	// when a Wake names it; Reason is why it waits.
	Wait   bool
	Until  int64
	Reason string
	// Woken are other evictions that may go now: the caller looks at them again.
	Woken []Woken[E]
}

// Woken is an eviction that a released scope held: the caller looks at it again (it asks
// the gate again) at Due, the time it fell due.
type Woken[E comparable] struct {
	Ev  E
	Due int64
}

// Gate is what an eviction that is due passes before its first attempt: its budgets, in
// order. E is the caller's eviction, by pointer: the gate's waiting sets hold it. It is
// safe for concurrent use; nothing is called under its lock but the budgets.
type Gate[E comparable] struct {
	mu       sync.Mutex
	budgets  []Budget
	causes   bool
	counters []HolderCounter
	went     []Recorder
	trackers []Tracker
	refill   []Refiller
	waiting  map[Scope]map[E]*Hold // the evictions that wait for each scope
	fresh    Hold                  // the hold of an eviction asked about first, until it waits
	holds    uint64                // the holds made so far
}

// HolderCounter is a budget that counts holders, as the brake does: the gate tells it every
// holder update, and wakes what the scopes it returns held.
type HolderCounter interface {
	// HolderUpdated counts the holder's group and taints, or forgets it (deleted), and
	// appends to released the scopes that stopped holding evictions.
	HolderUpdated(name, group string, taints []v1.Taint, deleted bool, released []Scope) []Scope
}

// Refiller is a budget whose room can open at other times than when a scope it holds
// changes: after each Admit, Release and Ended, the gate asks it which of the evictions it
// holds may go now, and wakes them.
type Refiller interface {
	// Refill appends to released the scopes whose evictions may go now.
	Refill(released []Scope) []Scope
}

// NewGate returns a gate over budgets, asked in their order; nil when there are none.
func NewGate[E comparable](budgets ...Budget) *Gate[E] {
	if len(budgets) == 0 {
		return nil
	}
	g := &Gate[E]{budgets: budgets, waiting: map[Scope]map[E]*Hold{}}
	for _, b := range budgets {
		g.causes = g.causes || b.NeedsCauses()
		if c, ok := b.(HolderCounter); ok {
			g.counters = append(g.counters, c)
		}
		if r, ok := b.(Recorder); ok {
			g.went = append(g.went, r)
		}
		if t, ok := b.(Tracker); ok {
			g.trackers = append(g.trackers, t)
		}
		if r, ok := b.(Refiller); ok {
			g.refill = append(g.refill, r)
		}
	}
	return g
}

// NeedsCauses reports whether Admit needs Request.Causes.
func (g *Gate[E]) NeedsCauses() bool { return g.causes }

// Admit decides whether the eviction ev, asked about as r, may go. h is its hold from an
// earlier wait, or nil. It returns the hold to keep (nil when the eviction goes: the gate
// has forgotten it) and the decision.
func (g *Gate[E]) Admit(ev E, r *Request, h *Hold) (*Hold, Decision[E]) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h == nil {
		// Most evictions go at once: they get a hold of their own only if they wait.
		h = &g.fresh
		*h = Hold{due: r.Now, states: h.states}
		clear(h.states)
	}
	if h.states == nil {
		h.states = make([]any, len(g.budgets))
	}
	g.unwaitLocked(ev, h)
	for i, b := range g.budgets {
		v, state := b.Admit(r, h.states[i])
		h.states[i] = state
		if v.Wait {
			return g.waitLocked(ev, h, i, v, r.Now)
		}
	}
	for _, w := range g.went {
		w.Went(r)
	}
	return nil, Decision[E]{Woken: g.refillLocked(nil)}
}

// waitLocked holds ev, which budget i holds with v: the budgets after i give back what
// they reserved, and ev waits for v's scope or time.
func (g *Gate[E]) waitLocked(ev E, h *Hold, i int, v Verdict, now int64) (*Hold, Decision[E]) {
	for j := i + 1; j < len(g.budgets); j++ {
		if h.states[j] != nil {
			g.budgets[j].Release(h.states[j], now)
			h.states[j] = nil
		}
	}
	if h == &g.fresh {
		g.holds++
		h = &Hold{due: h.due, seq: g.holds, states: slices.Clone(h.states)}
	}
	if v.Until == 0 {
		h.scope, h.waits = v.Scope, true
		set := g.waiting[v.Scope]
		if set == nil {
			set = map[E]*Hold{}
			g.waiting[v.Scope] = set
		}
		set[ev] = h
	}
	return h, Decision[E]{Wait: true, Until: v.Until, Reason: v.Reason, Woken: g.refillLocked(nil)}
}

// refillLocked wakes what the Refillers say may go now, with released.
func (g *Gate[E]) refillLocked(released []Scope) []Woken[E] {
	for _, r := range g.refill {
		released = r.Refill(released)
	}
	if len(released) == 0 {
		return nil
	}
	return g.wakeLocked(released)
}

// Ended tells the budgets that track evictions that one which went has ended (see
// [Tracker]), and returns the evictions that the scopes they release held.
func (g *Gate[E]) Ended(now int64) []Woken[E] {
	if len(g.trackers) == 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var released []Scope
	for _, t := range g.trackers {
		released = t.Ended(now, released)
	}
	return g.refillLocked(released)
}

// Release forgets the hold h of the eviction ev, which leaves the gate without going
// (cancelled, skipped, or scheduled anew), and gives back what its budgets reserved. It
// returns the evictions that the room it gave back lets go.
func (g *Gate[E]) Release(ev E, h *Hold, now int64) []Woken[E] {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unwaitLocked(ev, h)
	for i, s := range h.states {
		if s != nil {
			g.budgets[i].Release(s, now)
			h.states[i] = nil
		}
	}
	return g.refillLocked(nil)
}

func (g *Gate[E]) unwaitLocked(ev E, h *Hold) {
	if !h.waits {
		return
	}
	if set := g.waiting[h.scope]; set != nil {
		delete(set, ev)
		if len(set) == 0 {
			delete(g.waiting, h.scope)
		}
	}
	h.scope, h.waits = Scope{}, false
}

// Wake releases scopes: the evictions they held are returned, in the order they fell due,
// for the caller to look at again; each keeps its hold until it passes the gate again. It
// takes only the gate's lock.
func (g *Gate[E]) Wake(scopes ...Scope) []Woken[E] {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wakeLocked(scopes)
}

func (g *Gate[E]) wakeLocked(scopes []Scope) []Woken[E] {
	type woken struct {
		w Woken[E]
		h *Hold
	}
	var all []woken
	for _, s := range scopes {
		for ev, h := range g.waiting[s] {
			h.scope, h.waits = Scope{}, false
			all = append(all, woken{Woken[E]{Ev: ev, Due: h.due}, h})
		}
		delete(g.waiting, s)
	}
	if len(all) == 0 {
		return nil
	}
	// Deadline order, so that they take the tokens of the rate limits in that order; ties
	// in the order they first waited.
	slices.SortFunc(all, func(a, b woken) int { return cmp.Or(cmp.Compare(a.h.due, b.h.due), cmp.Compare(a.h.seq, b.h.seq)) })
	out := make([]Woken[E], len(all))
	for i, a := range all {
		out[i] = a.w
	}
	return out
}

// Due returns when the eviction held by h fell due.
func (g *Gate[E]) Due(h *Hold) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return h.due
}

// HolderUpdated tells the budgets that count holders of a holder's update (deleted: its
// deletion), and returns the evictions that the scopes it released held. It takes only the
// gate's lock, for O(the holder's taints) in the common case.
func (g *Gate[E]) HolderUpdated(name, group string, taints []v1.Taint, deleted bool) []Woken[E] {
	if len(g.counters) == 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var released []Scope
	for _, c := range g.counters {
		released = c.HolderUpdated(name, group, taints, deleted, released)
	}
	if len(released) == 0 {
		return nil
	}
	return g.wakeLocked(released)
}
