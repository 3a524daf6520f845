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

// Owner is the workload a target belongs to, within its namespace; the zero Owner is none.
type Owner struct {
	Kind, Name string
}

// Request is one eviction that is due, as the gate asks its budgets about it; a budget must
// not keep it, since the caller may reuse it (and its Causes) once Admit returns.
type Request struct {
	Key     types.NamespacedName // the target
	UID     types.UID            // its incarnation
	Holder  string               // the holder that made it due
	Causes  []Cause              // the taints that make it due
	Owner   Owner                // its workload; zero for none
	Created int64                // when the target was created (unix nanoseconds); 0: not known
	Now     int64                // the time of the question (unix nanoseconds)
}

// Scope names what holds evictions until it is released ([Gate.Wake]): a paused taint key
// (in one Group if Grouped), a census scope, a place in line (Seq), the wait for Synced.
// Budgets tell theirs apart by Kind.
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

// Verdict is one budget's answer about an eviction that is due: Wait, until Until (unix
// nanoseconds), or, with Until 0, until Scope is released ([Gate.Wake]); Reason is why, as
// the engine reports it.
type Verdict struct {
	Wait   bool
	Until  int64
	Scope  Scope
	Reason string
}

// Go is the verdict of a budget that lets the eviction go.
var Go Verdict

// Budget is one limit on evictions that are due, called under the gate's lock only.
type Budget interface {
	// Admit answers for r. state is what it returned for the eviction last time (nil at
	// first); it returns the state to keep, which the gate keeps in the eviction's [Hold].
	Admit(r *Request, state any) (Verdict, any)
	// Release gives back what state reserves: the eviction left without going.
	Release(state any, now int64)
}

// The optional interfaces of a budget, which the gate asks for by type. Each appends to
// released the scopes whose evictions may go now.
type (
	// Recorder is told of each eviction that every budget let go.
	Recorder interface{ Went(r *Request) }
	// Tracker is told, once, of the end of each eviction that went: its target is gone or
	// moved, it left past its GoneBy, or it was closed without an action.
	Tracker interface {
		Ended(now int64, released []Scope) []Scope
	}
	// Refiller is asked after each Admit, Release and Ended, and by [Gate.Refill].
	Refiller interface {
		Refill(released []Scope) []Scope
	}
	// HolderCounter is told of every holder update.
	HolderCounter interface {
		HolderUpdated(name, group string, taints []v1.Taint, deleted bool, released []Scope) []Scope
	}
	// Condition holds while a condition of the cluster lasts, so it is asked about the
	// retries of an eviction that went too; the other budgets are not.
	Condition interface{ HoldsRetries() }
)

// Hold is what the gate keeps of an eviction that waits at it, for the caller to keep and
// give back; the gate's lock guards it.
type Hold struct {
	due    int64
	seq    uint64 // the order in which holds were made: ties of due wake in it
	scope  Scope  // what it waits for, while waits
	waits  bool
	states []any
}

// Decision is the gate's answer for an eviction that is due: Wait, until Until (0: until
// a Wake names it), for Reason; Woken are other evictions that may go now.
type Decision[E comparable] struct {
	Wait   bool
	Until  int64
	Reason string
	Woken  []Woken[E]
}

// Woken is an eviction that a released scope held: the caller asks the gate about it again
// at Due, the time it fell due.
type Woken[E comparable] struct {
	Ev  E
	Due int64
}

// Gate is what an eviction that is due passes before its first call: its budgets, asked in
// order; the first that says wait decides, and those after it give back what they reserved.
// E is the caller's eviction, by pointer. It is safe for concurrent use.
type Gate[E comparable] struct {
	mu      sync.Mutex
	budgets []Budget
	waiting map[Scope]map[E]*Hold
	holds   uint64 // holds made so far
	fresh   []any  // the states of an eviction asked about first, until it waits
}

// NewGate returns a gate over budgets, asked in their order; nil when there are none.
func NewGate[E comparable](budgets ...Budget) *Gate[E] {
	if len(budgets) == 0 {
		return nil
	}
	return &Gate[E]{budgets: budgets, waiting: map[Scope]map[E]*Hold{}, fresh: make([]any, len(budgets))}
}

// Admit decides whether ev, asked about as r, may go: its first call, or with retry, a
// retry of an eviction that went, which only the Conditions are asked about. h is its hold
// from an earlier wait, or nil. It returns the hold to keep: nil when ev goes.
func (g *Gate[E]) Admit(ev E, r *Request, h *Hold, retry bool) (*Hold, Decision[E]) {
	g.mu.Lock()
	defer g.mu.Unlock()
	states := g.fresh // most evictions go at once: a hold only for those that wait
	if h != nil {
		g.unwait(ev, h)
		states = h.states
	} else {
		clear(states)
	}
	for i, b := range g.budgets {
		if _, ok := b.(Condition); retry && !ok {
			continue
		}
		v, state := b.Admit(r, states[i])
		states[i] = state
		if v.Wait {
			g.releaseFrom(states, i+1, r.Now)
			if h == nil {
				g.holds++
				h = &Hold{due: r.Now, seq: g.holds, states: slices.Clone(states)}
			}
			if v.Until == 0 {
				g.wait(ev, h, v.Scope)
			}
			return h, Decision[E]{Wait: true, Until: v.Until, Reason: v.Reason, Woken: g.refill(nil)}
		}
	}
	for _, b := range g.budgets {
		if rec, ok := b.(Recorder); ok && !retry {
			rec.Went(r)
		}
	}
	return nil, Decision[E]{Woken: g.refill(nil)}
}

// releaseFrom gives back what the budgets from i on reserved in states.
func (g *Gate[E]) releaseFrom(states []any, i int, now int64) {
	for ; i < len(g.budgets); i++ {
		if states[i] != nil {
			g.budgets[i].Release(states[i], now)
			states[i] = nil
		}
	}
}

// Release forgets the hold h of ev, which leaves without going, and gives back what its
// budgets reserved. It returns the evictions that the room given back lets go.
func (g *Gate[E]) Release(ev E, h *Hold, now int64) []Woken[E] {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unwait(ev, h)
	g.releaseFrom(h.states, 0, now)
	return g.refill(nil)
}

// Refill returns the evictions that the Refillers let go now, for a room that grew with
// something no scope shows (InFlight's fraction, with the evictions kept).
func (g *Gate[E]) Refill() []Woken[E] {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refill(nil)
}

// Ended tells the Trackers that an eviction that went has ended, and returns the evictions
// that what they release held.
func (g *Gate[E]) Ended(now int64) []Woken[E] {
	g.mu.Lock()
	defer g.mu.Unlock()
	var released []Scope
	for _, b := range g.budgets {
		if t, ok := b.(Tracker); ok {
			released = t.Ended(now, released)
		}
	}
	return g.refill(released)
}

// HolderUpdated tells the HolderCounters of a holder's update (deleted: its deletion), and
// returns the evictions that the scopes it released held.
func (g *Gate[E]) HolderUpdated(name, group string, taints []v1.Taint, deleted bool) []Woken[E] {
	g.mu.Lock()
	defer g.mu.Unlock()
	var released []Scope
	for _, b := range g.budgets {
		if c, ok := b.(HolderCounter); ok {
			released = c.HolderUpdated(name, group, taints, deleted, released)
		}
	}
	return g.wake(released)
}

// Wake releases scopes: the evictions they held are returned, in the order they fell due,
// for the caller to ask about again; each keeps its hold until then.
func (g *Gate[E]) Wake(scopes ...Scope) []Woken[E] {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wake(scopes)
}

// Due returns when the eviction held by h fell due.
func (g *Gate[E]) Due(h *Hold) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return h.due
}

func (g *Gate[E]) wait(ev E, h *Hold, s Scope) {
	h.scope, h.waits = s, true
	if g.waiting[s] == nil {
		g.waiting[s] = map[E]*Hold{}
	}
	g.waiting[s][ev] = h
}

func (g *Gate[E]) unwait(ev E, h *Hold) {
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

// refill wakes released and what the Refillers say may go now.
func (g *Gate[E]) refill(released []Scope) []Woken[E] {
	for _, b := range g.budgets {
		if r, ok := b.(Refiller); ok {
			released = r.Refill(released)
		}
	}
	return g.wake(released)
}

// wake takes the evictions that scopes held out of their waits, in the order they fell due
// (so that they take the rate limits' tokens in that order), ties in the order they first
// waited.
func (g *Gate[E]) wake(scopes []Scope) []Woken[E] {
	type woke struct {
		ev E
		h  *Hold
	}
	var ws []woke
	for _, s := range scopes {
		for ev, h := range g.waiting[s] {
			h.scope, h.waits = Scope{}, false
			ws = append(ws, woke{ev, h})
		}
		delete(g.waiting, s)
	}
	if len(ws) == 0 {
		return nil
	}
	slices.SortFunc(ws, func(a, b woke) int {
		return cmp.Or(cmp.Compare(a.h.due, b.h.due), cmp.Compare(a.h.seq, b.h.seq))
	})
	out := make([]Woken[E], len(ws))
	for i, w := range ws {
		out[i] = Woken[E]{Ev: w.ev, Due: w.h.due}
	}
	return out
}
