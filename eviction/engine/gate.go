package engine

import (
	"cmp"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// gate is what an eviction that is due passes before its first attempt: the brake, then the
// rate limits (Options.RateLimit, TaintRateLimits, Brake). It decides, and the Engine
// carries the decision out on the eviction's record and in the schedule: the gate never
// touches either. What it must remember of an eviction that waits is in the record's hold,
// whose fields only the gate reads and writes, under its lock: the slot it holds (and the
// buckets the slot came from), which brake scope paused it, when it fell due, and the reason
// last reported.
//
// It is safe for concurrent use; the Engine calls admit and release under the eviction's
// stripe lock. A nil *gate is the gate of an Engine without budgets: use it only after
// checking for nil.
type gate struct {
	mu     sync.Mutex
	rate   *bucket            // nil: no overall limit
	byKey  map[string]*bucket // per taint key
	brake  *brake             // nil: no brake
	pauser Pauser             // nil: none (Options.Pauser)
	told   []Cause            // the causes the pauser is told, reused under mu
	paused map[brakeScope]map[types.NamespacedName]*hold
}

// hold is an eviction that is due and waits. The gate's lock guards its fields.
type hold struct {
	due    int64      // when the gate first found it due (unix nanoseconds)
	reason Reason     // what Delayed last reported
	slot   int64      // the slot it holds, unix nanoseconds; 0 for none
	from   []*bucket  // the buckets slot was taken from
	scope  brakeScope // what paused it, while paused; zero otherwise
}

// decision is the gate's answer for an eviction that is due.
type decision struct {
	// wait is true when the eviction may not go yet; then until is when to look again (its
	// slot), or 0 when it waits for the brake to release it.
	wait  bool
	until int64
	// report is the reason to report to Observer.Delayed; empty when it did not change.
	report Reason
}

// newGate returns the gate for opts, or nil when opts set no budget.
func newGate(opts Options) *gate {
	if !opts.RateLimit.limits() && len(opts.TaintRateLimits) == 0 && !opts.Brake.brakes() && opts.Pauser == nil {
		return nil
	}
	g := &gate{
		pauser: opts.Pauser,
		byKey:  make(map[string]*bucket),
		paused: make(map[brakeScope]map[types.NamespacedName]*hold),
	}
	if opts.RateLimit.limits() {
		g.rate = newBucket(opts.RateLimit)
	}
	for k, l := range opts.TaintRateLimits {
		if l.limits() {
			g.byKey[k] = newBucket(l)
		}
	}
	if opts.Brake.brakes() {
		g.brake = newBrake(opts.Brake)
	}
	return g
}

// needsCauses reports whether admit needs the causes that make an eviction due.
func (g *gate) needsCauses() bool { return g.brake != nil || g.pauser != nil || len(g.byKey) > 0 }

// admit decides whether the eviction ref, due now (unix nanoseconds) because of causes,
// may go. h is the hold it has from an earlier wait, or nil. It returns the hold to keep
// (nil when the eviction goes: the gate has forgotten it) and the decision.
func (g *gate) admit(ref Ref, h *hold, causes []cause, now int64) (*hold, decision) {
	key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	g.mu.Lock()
	defer g.mu.Unlock()
	var scope brakeScope
	paused := false
	if g.brake != nil {
		scope, paused = g.brake.paused(causes)
	}
	if !paused && g.pauser != nil {
		scope, paused = g.askPauser(ref, causes)
	}
	if paused {
		if h == nil {
			h = &hold{due: now}
		}
		g.giveBackLocked(h, now)
		g.unpauseLocked(key, h)
		h.scope = scope
		set := g.paused[scope]
		if set == nil {
			set = make(map[types.NamespacedName]*hold)
			g.paused[scope] = set
		}
		set[key] = h
		return h, waitFor(h, ReasonPaused, 0)
	}
	if h != nil {
		g.unpauseLocked(key, h)
		switch {
		case h.slot > now:
			return h, waitFor(h, ReasonRateLimited, h.slot)
		case h.slot != 0: // its slot has come
			return nil, decision{}
		}
	}
	var buf [4]*bucket // the common case allocates nothing: most evictions go at once
	bs := g.bucketsFor(buf[:0], causes)
	slot := reserve(bs, now)
	if slot <= now {
		return nil, decision{}
	}
	if h == nil {
		h = &hold{due: now}
	}
	h.slot, h.from = slot, slices.Clone(bs)
	return h, waitFor(h, ReasonRateLimited, slot)
}

// waitFor records reason as h's and returns the decision to wait until until, reporting
// reason if it changed.
func waitFor(h *hold, reason Reason, until int64) decision {
	d := decision{wait: true, until: until}
	if h.reason != reason {
		h.reason, d.report = reason, reason
	}
	return d
}

// bucketsFor appends to bs the buckets an eviction due because of causes takes a slot from.
func (g *gate) bucketsFor(bs []*bucket, causes []cause) []*bucket {
	if g.rate != nil {
		bs = append(bs, g.rate)
	}
	for _, c := range causes {
		if b := g.byKey[c.key]; b != nil && !slices.Contains(bs, b) {
			bs = append(bs, b)
		}
	}
	return bs
}

// release forgets the hold h of key's eviction, which is cancelled, skipped or scheduled
// anew, and gives back its slot.
func (g *gate) release(key types.NamespacedName, h *hold, now int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.giveBackLocked(h, now)
	g.unpauseLocked(key, h)
}

func (g *gate) giveBackLocked(h *hold, now int64) {
	if h.slot == 0 {
		return
	}
	for _, b := range h.from {
		b.giveBack(h.slot, now)
	}
	h.slot, h.from = 0, nil
}

func (g *gate) unpauseLocked(key types.NamespacedName, h *hold) {
	if h.scope == (brakeScope{}) {
		return
	}
	if set := g.paused[h.scope]; set != nil {
		delete(set, key)
		if len(set) == 0 {
			delete(g.paused, h.scope)
		}
	}
	h.scope = brakeScope{}
}

// waiting returns when h's eviction fell due and why it waits.
func (g *gate) waiting(h *hold) (due int64, reason Reason) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return h.due, h.reason
}

// unpaused is an eviction that a brake scope held until it resumed: the Engine puts it back
// in the schedule at the time it fell due, unless its record has let go of h meanwhile.
type unpaused struct {
	key types.NamespacedName
	h   *hold
	due int64
}

// holderUpdated counts a holder's group and NoExecute taints for the brake, and returns the
// evictions held by scopes that resumed. A hold stays a hold, with reason Paused, until its
// eviction passes the gate again.
func (g *gate) holderUpdated(name, group string, taints []v1.Taint) []unpaused {
	if g.brake == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.resumeLocked(g.brake.set(name, group, taints, nil))
}

// holderDeleted forgets a holder for the brake, as holderUpdated counts one.
func (g *gate) holderDeleted(name string) []unpaused {
	if g.brake == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.resumeLocked(g.brake.remove(name, nil))
}

func (g *gate) resumeLocked(resumed []brakeScope) []unpaused {
	var out []unpaused
	for _, scope := range resumed {
		for key, h := range g.paused[scope] {
			h.scope = brakeScope{}
			out = append(out, unpaused{key: key, h: h, due: h.due})
		}
		delete(g.paused, scope)
	}
	// Deadline order, so that they take the tokens of the rate limits in that order.
	slices.SortFunc(out, func(a, b unpaused) int {
		return cmp.Or(cmp.Compare(a.due, b.due), cmp.Compare(a.key.Namespace, b.key.Namespace), cmp.Compare(a.key.Name, b.key.Name))
	})
	return out
}
