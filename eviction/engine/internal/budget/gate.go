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
	// ID is the caller's name for the eviction, given back by Wake.
	ID uint64
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
// over all holders or within one group, a scope the caller's Pauser or Census named, or one
// eviction's place in a queue (Seq). Budgets make their own, told apart by Kind.
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
	KindPauser
	KindInFlight
	KindConfirm
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
// bounds the evictions in flight must.
type Tracker interface {
	Recorder
	// Ended: the eviction id, which went, has ended: its target is gone or was moved
	// (the Source shows the action's effect), or it was closed without one. It appends to
	// released the scopes that may let evictions go now.
	Ended(id uint64, now int64, released []Scope) []Scope
}

// Hold is what the gate keeps of an eviction that waits at it, for the caller to keep with
// the eviction and give back: when it fell due, why it waits, and each budget's state. Its
// fields are guarded by the gate's lock.
type Hold struct {
	due    int64
	reason string
	scope  Scope // while it waits for a scope, to be found by Wake; zero otherwise
	waits  bool  // it is in the gate's waiting set of scope
	states []any
}

// Decision is the gate's answer for an eviction that is due.
type Decision struct {
	// Wait is true when the eviction may not go yet; Until is when to look again, 0 for
	// when a Wake names it.
	Wait  bool
	Until int64
	// Report is the reason to report as Delayed; empty when it did not change.
	Report string
	// Woken are other evictions that may go now: the caller looks at them again.
	Woken []Woken
}

// Gate is what an eviction that is due passes before its first attempt: its budgets, in
// order. It is safe for concurrent use; its lock is taken under the engine's stripe locks
// and before the engine's schedule's (see the engine's doc), and nothing is called under it
// but the budgets.
type Gate struct {
	mu       sync.Mutex
	budgets  []Budget
	causes   bool
	counters []HolderCounter
	went     []Recorder
	trackers []Tracker
	refill   []Refiller
	waiting  map[Scope]map[uint64]*Hold // holds that wait for a scope, by the caller's ID
	delayed  map[string]int             // holds by the reason they wait for
	fresh    Hold                       // the hold of an eviction asked about first, until it waits
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
func NewGate(budgets ...Budget) *Gate {
	if len(budgets) == 0 {
		return nil
	}
	g := &Gate{budgets: budgets, waiting: map[Scope]map[uint64]*Hold{}, delayed: map[string]int{}}
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
func (g *Gate) NeedsCauses() bool { return g.causes }

// Tracks reports whether a budget follows the evictions it lets go ([Tracker]), which then
// names them by their IDs until they end.
func (g *Gate) Tracks() bool { return g != nil && len(g.trackers) > 0 }

// CountsHolders reports whether the gate wants holder updates (HolderUpdated).
func (g *Gate) CountsHolders() bool { return len(g.counters) > 0 }

// Admit decides whether the eviction r may go. h is its hold from an earlier wait, or nil.
// It returns the hold to keep (nil when the eviction goes: the gate has forgotten it) and
// the decision.
func (g *Gate) Admit(r *Request, h *Hold) (*Hold, Decision) {
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
	g.unwaitLocked(r.ID, h)
	for i, b := range g.budgets {
		v, state := b.Admit(r, h.states[i])
		h.states[i] = state
		if !v.Wait {
			continue
		}
		for j := i + 1; j < len(g.budgets); j++ {
			if h.states[j] != nil {
				g.budgets[j].Release(h.states[j], r.Now)
				h.states[j] = nil
			}
		}
		if h == &g.fresh {
			h = &Hold{due: h.due, states: slices.Clone(h.states)}
		}
		if v.Until == 0 {
			h.scope, h.waits = v.Scope, true
			set := g.waiting[v.Scope]
			if set == nil {
				set = map[uint64]*Hold{}
				g.waiting[v.Scope] = set
			}
			set[r.ID] = h
		}
		d := Decision{Wait: true, Until: v.Until}
		if h.reason != v.Reason {
			g.countLocked(h.reason, -1)
			g.countLocked(v.Reason, +1)
			h.reason, d.Report = v.Reason, v.Reason
		}
		d.Woken = g.refillLocked(nil)
		return h, d
	}
	g.countLocked(h.reason, -1)
	for _, w := range g.went {
		w.Went(r)
	}
	return nil, Decision{Woken: g.refillLocked(nil)}
}

// refillLocked wakes what the Refillers say may go now, with released.
func (g *Gate) refillLocked(released []Scope) []Woken {
	for _, r := range g.refill {
		released = r.Refill(released)
	}
	if len(released) == 0 {
		return nil
	}
	return g.wakeLocked(released)
}

// Ended tells the budgets that track evictions that the eviction id, which went, has
// ended (see [Tracker]), and returns the evictions that the scopes they release held.
func (g *Gate) Ended(id uint64, now int64) []Woken {
	if len(g.trackers) == 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var released []Scope
	for _, t := range g.trackers {
		released = t.Ended(id, now, released)
	}
	return g.refillLocked(released)
}

// Release forgets the hold h of the eviction id, which leaves the gate without going
// (cancelled, skipped, or scheduled anew), and gives back what its budgets reserved. It
// returns the evictions that the room it gave back lets go.
func (g *Gate) Release(id uint64, h *Hold, now int64) []Woken {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unwaitLocked(id, h)
	for i, s := range h.states {
		if s != nil {
			g.budgets[i].Release(s, now)
			h.states[i] = nil
		}
	}
	g.countLocked(h.reason, -1)
	h.reason = ""
	return g.refillLocked(nil)
}

func (g *Gate) unwaitLocked(id uint64, h *Hold) {
	if !h.waits {
		return
	}
	if set := g.waiting[h.scope]; set != nil {
		delete(set, id)
		if len(set) == 0 {
			delete(g.waiting, h.scope)
		}
	}
	h.scope, h.waits = Scope{}, false
}

func (g *Gate) countLocked(reason string, d int) {
	if reason == "" {
		return
	}
	if g.delayed[reason] += d; g.delayed[reason] == 0 {
		delete(g.delayed, reason)
	}
}

// Waiting returns when h's eviction fell due and why it waits.
func (g *Gate) Waiting(h *Hold) (due int64, reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return h.due, h.reason
}

// Delayed returns how many evictions wait at the gate, by reason.
func (g *Gate) Delayed() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int, len(g.delayed))
	for r, n := range g.delayed {
		out[r] = n
	}
	return out
}

// Woken is an eviction that a released scope held: the caller looks at it again (it asks
// the gate again) at Due, the time it fell due.
type Woken struct {
	ID  uint64
	Due int64
}

// Wake releases scopes: the evictions they held are returned, in the order they fell due,
// for the caller to look at again; each stays a hold, with its reason, until it passes the
// gate again. It takes only the gate's lock.
func (g *Gate) Wake(scopes ...Scope) []Woken {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wakeLocked(scopes)
}

func (g *Gate) wakeLocked(scopes []Scope) []Woken {
	var out []Woken
	for _, s := range scopes {
		for id, h := range g.waiting[s] {
			h.scope, h.waits = Scope{}, false
			out = append(out, Woken{ID: id, Due: h.due})
		}
		delete(g.waiting, s)
	}
	// Deadline order, so that they take the tokens of the rate limits in that order.
	slices.SortFunc(out, func(a, b Woken) int { return cmp.Or(cmp.Compare(a.Due, b.Due), cmp.Compare(a.ID, b.ID)) })
	return out
}

// HolderUpdated tells the budgets that count holders of a holder's update (deleted: its
// deletion), and returns the evictions that the scopes it released held. It takes only the
// gate's lock, for O(the holder's taints) in the common case.
func (g *Gate) HolderUpdated(name, group string, taints []v1.Taint, deleted bool) []Woken {
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
