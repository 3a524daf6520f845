package budget

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Brake counts, per taint key, the known holders that carry a NoExecute taint with that key,
// over all holders and per group, and decides from these counts which keys' evictions are
// paused. A key is paused when more than the fraction of holders (of all, or of one group)
// carry it, and resumes when fewer than the fraction do: at exactly the fraction it stays as
// it was, so a fleet hovering there does not flap. It is paused too while at least the
// floor of holders carry it (of all, or of one group), whatever the fraction. A group all
// of whose holders carry the key is fully disrupted, as kube's node lifecycle controller
// says of a zone: its evictions of that key pause (BrakeRules.FullPause), or go at a rate
// of their own (BrakeRules.FullRate, taken by the Tokens budget), the group's other rules
// not holding them, as kube evicts from a zone that is down altogether.
//
// Each holder update costs O(its taints) plus, when the number of holders in a scope
// changes, a look at each key counted in that scope (a fleet has a handful): nothing rescans
// holders.
// The gate asks it first, before the rate limits, about every eviction that falls due; it
// is not safe for concurrent use (the gate's lock guards it); make it with NewBrake.
type Brake struct {
	all, group scopeRules
	holders    map[string]holderMark
	every      tally
	zones      map[string]*tally
}

// BrakeRules are what the brake pauses: a key carried by more than Fraction of all holders
// or by at least Holders of them; within a group, by more than GroupFraction of its holders
// or by at least GroupHolders of them; and, in a group all of whose holders carry it,
// pause (FullPause) or go at FullRate. The zero value of each rule is off.
type BrakeRules struct {
	Fraction, GroupFraction float64
	Holders, GroupHolders   int
	FullPause               bool
	FullRate                Rate
}

// scopeRules are the rules of one kind of scope: all holders, or one group.
type scopeRules struct {
	fraction  float64
	floor     int
	group     bool // full disruption applies
	fullPause bool
	fullRate  Rate
}

// holderMark is what the brake counted for one holder.
type holderMark struct {
	zone string
	keys []string // distinct keys of its NoExecute taints
}

// tally counts the holders of one scope, all of them or one group.
type tally struct {
	holders int
	keys    map[string]*keyCount
}

// keyCount counts the holders of a scope that carry a key, and what that does to the key's
// evictions.
type keyCount struct {
	n      int
	over   bool    // over the fraction (with its hysteresis)
	paused bool    // paused by any rule
	full   *bucket // fully disrupted, with a rate of its own: its bucket
}

// NewBrake returns the brake of rules; nil when they pause nothing.
func NewBrake(r BrakeRules) *Brake {
	if r.Fraction <= 0 && r.GroupFraction <= 0 && r.Holders <= 0 && r.GroupHolders <= 0 && !r.FullPause && r.FullRate.PerSecond <= 0 {
		return nil
	}
	return &Brake{
		all:     scopeRules{fraction: r.Fraction, floor: r.Holders},
		group:   scopeRules{fraction: r.GroupFraction, floor: r.GroupHolders, group: true, fullPause: r.FullPause, fullRate: r.FullRate},
		holders: make(map[string]holderMark),
		zones:   make(map[string]*tally),
	}
}

// on reports whether the rules of a scope can pause anything.
func (r scopeRules) on() bool {
	return r.fraction > 0 || r.floor > 0 || r.fullPause || r.fullRate.PerSecond > 0
}

// NeedsCauses reports true: the brake pauses by the keys and groups of the causes.
func (b *Brake) NeedsCauses() bool { return true }

// Admit holds the eviction while a scope of one of its causes is paused.
func (b *Brake) Admit(r *Request, _ any) (Verdict, any) {
	if scope, paused := b.paused(r.Causes); paused {
		return Verdict{Wait: true, Scope: scope, Reason: "Paused"}, nil
	}
	return Go, nil
}

// Release does nothing: the brake reserves nothing.
func (b *Brake) Release(any, int64) {}

// fullBucket returns the bucket of the rate of a fully disrupted group that the cause takes
// a token of, or nil.
func (b *Brake) fullBucket(c Cause) *bucket {
	if z := b.zones[c.Group]; z != nil {
		if k := z.keys[c.Key]; k != nil {
			return k.full
		}
	}
	return nil
}

// HolderUpdated counts a holder for the brake, as the gate's [HolderCounter].
func (b *Brake) HolderUpdated(name, group string, taints []v1.Taint, deleted bool, released []Scope) []Scope {
	if deleted {
		return b.remove(name, released)
	}
	return b.set(name, group, taints, released)
}

// set records the group and NoExecute taint keys of the holder name, replacing what was
// recorded for it, and appends to resumed the scopes whose keys stopped being paused.
func (b *Brake) set(name, group string, taints []v1.Taint, resumed []Scope) []Scope {
	old, known := b.holders[name]
	if known && old.zone == group && sameKeys(old.keys, taints) {
		return resumed // the common update, a status change: nothing to count, no allocation
	}
	mark := holderMark{zone: group, keys: noExecuteKeys(taints)}
	if known {
		resumed = b.count(old, -1, resumed)
	}
	b.holders[name] = mark
	return b.count(mark, +1, resumed)
}

// remove forgets a deleted holder and appends to resumed the scopes that stopped pausing.
func (b *Brake) remove(name string, resumed []Scope) []Scope {
	old, known := b.holders[name]
	if !known {
		return resumed
	}
	delete(b.holders, name)
	return b.count(old, -1, resumed)
}

// count adds (d = 1) or removes (d = -1) a holder with mark in both scopes it belongs to.
func (b *Brake) count(mark holderMark, d int, resumed []Scope) []Scope {
	if b.all.on() {
		resumed = b.every.count(mark.keys, d, b.all, Scope{Kind: KindBrake}, resumed)
	}
	if b.group.on() {
		z := b.zones[mark.zone]
		if z == nil {
			z = &tally{}
			b.zones[mark.zone] = z
		}
		resumed = z.count(mark.keys, d, b.group, Scope{Kind: KindBrake, Group: mark.zone, Grouped: true}, resumed)
		if z.holders == 0 {
			delete(b.zones, mark.zone)
		}
	}
	return resumed
}

// count adds d to the holders of t and to the count of each of keys, then decides again for
// every key whose share changed: all of them when the number of holders changed.
func (t *tally) count(keys []string, d int, r scopeRules, scope Scope, resumed []Scope) []Scope {
	if t.keys == nil {
		t.keys = make(map[string]*keyCount)
	}
	t.holders += d
	for _, k := range keys {
		c := t.keys[k]
		if c == nil {
			c = &keyCount{}
			t.keys[k] = c
		}
		c.n += d
	}
	for k, c := range t.keys { // d is never 0: the number of holders changed
		share := float64(c.n)
		limit := r.fraction * float64(t.holders)
		switch {
		case r.fraction <= 0:
		case !c.over && share > limit:
			c.over = true
		case c.over && (share < limit || c.n == 0):
			c.over = false
		}
		was := c.paused
		c.paused = c.over || r.floor > 0 && c.n >= r.floor
		full := r.group && c.n > 0 && c.n == t.holders
		switch {
		case full && r.fullRate.PerSecond > 0:
			c.paused = false // down altogether: it goes, at its own rate
			if c.full == nil {
				c.full = newBucket(r.fullRate)
			}
		case full && r.fullPause:
			c.paused = true
			c.full = nil
		default:
			c.full = nil
		}
		if was && !c.paused {
			scope.Key = k
			resumed = append(resumed, scope)
		}
		if c.n == 0 {
			delete(t.keys, k)
		}
	}
	return resumed
}

// paused returns the first scope that pauses evictions caused by any of causes, if one
// does.
func (b *Brake) paused(causes []Cause) (Scope, bool) {
	for _, c := range causes {
		if k := b.every.keys[c.Key]; k != nil && k.paused {
			return Scope{Kind: KindBrake, Key: c.Key}, true
		}
		if z := b.zones[c.Group]; z != nil {
			if k := z.keys[c.Key]; k != nil && k.paused {
				return Scope{Kind: KindBrake, Key: c.Key, Group: c.Group, Grouped: true}, true
			}
		}
	}
	return Scope{}, false
}

// noExecuteKeys returns the distinct keys of the NoExecute taints, sorted; nil when there
// are none, which is the common case and allocates nothing.
func noExecuteKeys(taints []v1.Taint) []string {
	var keys []string
	for i := range taints {
		if taints[i].Effect == v1.TaintEffectNoExecute && !slices.Contains(keys, taints[i].Key) {
			keys = append(keys, taints[i].Key)
		}
	}
	slices.Sort(keys)
	return keys
}

// sameKeys reports whether keys are the distinct keys of the NoExecute taints.
func sameKeys(keys []string, taints []v1.Taint) bool {
	for i := range taints {
		if taints[i].Effect == v1.TaintEffectNoExecute && !slices.Contains(keys, taints[i].Key) {
			return false
		}
	}
	for _, k := range keys {
		if !slices.ContainsFunc(taints, func(t v1.Taint) bool { return t.Key == k && t.Effect == v1.TaintEffectNoExecute }) {
			return false
		}
	}
	return true
}
