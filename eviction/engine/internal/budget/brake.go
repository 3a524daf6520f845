package budget

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Brake is the engine's Brake. It counts, per taint key, the known holders that carry a
// NoExecute taint with that key, over all holders and per group, and pauses the key's
// evictions while more than the fraction of them carry it, or at least the floor, until
// fewer than the fraction do: at exactly the fraction it stays as it was, so that a fleet
// hovering there does not flap. A group all of whose holders carry the key is fully
// disrupted: its evictions of the key pause (FullPause), or go at a rate of their own
// (FullRate, which Tokens takes), the group's other rules not holding them. A holder update
// costs O(its taints), and O(the keys counted in a scope) when that scope's number of
// holders changes. Make it with NewBrake.
type Brake struct {
	all, group scopeRules
	holders    map[string]holderMark
	every      tally
	zones      map[string]*tally
}

// BrakeRules are what the brake pauses; the zero value of each rule is off.
type BrakeRules struct {
	Fraction, GroupFraction float64
	Holders, GroupHolders   int
	FullPause               bool
	FullRate                Rate
}

// scopeRules are the rules of one kind of scope: all holders, or one group (the only one
// with full disruption's).
type scopeRules struct {
	fraction  float64
	floor     int
	fullPause bool
	fullRate  Rate
}

// holderMark is what the brake counted for one holder: its group and distinct keys.
type holderMark struct {
	zone string
	keys []string
}

// tally counts the holders of one scope, and those of them that carry each key.
type tally struct {
	holders int
	keys    map[string]*keyCount
}

// keyCount is one key of a scope: its holders, and what that does to its evictions.
type keyCount struct {
	n      int
	over   bool    // over the fraction (with its hysteresis)
	paused bool    // paused by any rule
	full   *bucket // fully disrupted, with a rate of its own: its bucket
}

// NewBrake returns the brake of r; nil when r pauses nothing.
func NewBrake(r BrakeRules) *Brake {
	b := &Brake{
		all:     scopeRules{fraction: r.Fraction, floor: r.Holders},
		group:   scopeRules{fraction: r.GroupFraction, floor: r.GroupHolders, fullPause: r.FullPause, fullRate: r.FullRate},
		holders: make(map[string]holderMark),
		zones:   make(map[string]*tally),
	}
	if !b.all.on() && !b.group.on() {
		return nil
	}
	return b
}

func (r scopeRules) on() bool {
	return r.fraction > 0 || r.floor > 0 || r.fullPause || r.fullRate.PerSecond > 0
}

// Admit holds the eviction while a scope of one of its causes is paused.
func (b *Brake) Admit(r *Request, _ any) (Verdict, any) {
	for _, c := range r.Causes {
		if k := b.every.keys[c.Key]; k != nil && k.paused {
			return Verdict{Wait: true, Scope: Scope{Kind: KindBrake, Key: c.Key}, Reason: "Paused"}, nil
		}
		if z := b.zones[c.Group]; z != nil {
			if k := z.keys[c.Key]; k != nil && k.paused {
				return Verdict{Wait: true, Scope: Scope{Kind: KindBrake, Key: c.Key, Group: c.Group, Grouped: true}, Reason: "Paused"}, nil
			}
		}
	}
	return Go, nil
}

// Release does nothing: the brake reserves nothing.
func (b *Brake) Release(any, int64) {}

// fullBucket returns the bucket of the fully disrupted group's rate that c takes a token
// of, or nil.
func (b *Brake) fullBucket(c Cause) *bucket {
	if z := b.zones[c.Group]; z != nil && z.keys[c.Key] != nil {
		return z.keys[c.Key].full
	}
	return nil
}

// HolderUpdated counts the holder name in group with taints (or forgets it), and appends
// to resumed the scopes whose keys stopped being paused.
func (b *Brake) HolderUpdated(name, group string, taints []v1.Taint, deleted bool, resumed []Scope) []Scope {
	old, known := b.holders[name]
	if !deleted && known && old.zone == group && sameKeys(old.keys, taints) {
		return resumed // the common update, a status change: nothing to count
	}
	if known {
		resumed = b.count(old, -1, resumed)
		delete(b.holders, name)
	}
	if deleted {
		return resumed
	}
	mark := holderMark{zone: group, keys: noExecuteKeys(taints)}
	b.holders[name] = mark
	return b.count(mark, +1, resumed)
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

// count adds d to the holders of t and to each of keys, then decides again about every key
// of t, since the number of holders changed.
func (t *tally) count(keys []string, d int, r scopeRules, scope Scope, resumed []Scope) []Scope {
	if t.keys == nil {
		t.keys = make(map[string]*keyCount)
	}
	t.holders += d
	for _, k := range keys {
		if t.keys[k] == nil {
			t.keys[k] = &keyCount{}
		}
		t.keys[k].n += d
	}
	for k, c := range t.keys {
		was := c.paused
		c.decide(t.holders, r)
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

// decide sets whether the key's evictions pause, its scope having holders.
func (c *keyCount) decide(holders int, r scopeRules) {
	limit := r.fraction * float64(holders)
	switch {
	case r.fraction <= 0:
	case !c.over && float64(c.n) > limit:
		c.over = true
	case c.over && (float64(c.n) < limit || c.n == 0):
		c.over = false
	}
	c.paused = c.over || r.floor > 0 && c.n >= r.floor
	full := c.n > 0 && c.n == holders
	switch {
	case full && r.fullRate.PerSecond > 0:
		c.paused = false // down altogether: it goes, at its own rate
		if c.full == nil {
			c.full = newBucket(r.fullRate)
		}
	case full && r.fullPause:
		c.paused, c.full = true, nil
	default:
		c.full = nil
	}
}

// noExecuteKeys returns the distinct keys of the NoExecute taints, sorted; nil for none.
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

// HoldsRetries marks the brake a [Condition].
func (*Brake) HoldsRetries() {}
