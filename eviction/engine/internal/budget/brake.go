package budget

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Brake counts, per taint key, the known holders that carry a NoExecute taint with that key,
// over all holders and per group, and decides from these counts which keys' evictions are
// paused. A key is paused when more than the fraction of holders (of all, or of one group)
// carry it, and resumes when fewer than the fraction do: at exactly the fraction it stays as
// it was, so a fleet hovering there does not flap.
//
// Each holder update costs O(its taints) plus, when the number of holders in a scope
// changes, a look at each key counted in that scope (a fleet has a handful): nothing rescans
// holders.
// The gate asks it first, before the rate limits, about every eviction that falls due; it
// is not safe for concurrent use (the gate's lock guards it); make it with NewBrake.
type Brake struct {
	fraction     float64 // of all known holders; 0: no fleet-wide rule
	zoneFraction float64 // of the known holders of each group; 0: no group rule
	holders      map[string]holderMark
	all          tally
	zones        map[string]*tally
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

// keyCount counts the holders of a scope that carry a key, and whether that pauses the key.
type keyCount struct {
	n      int
	paused bool
}

// NewBrake returns the brake of fraction (of all holders) and groupFraction (of each
// group's), each 0 for no such rule; nil when neither pauses anything.
func NewBrake(fraction, groupFraction float64) *Brake {
	if fraction <= 0 && groupFraction <= 0 {
		return nil
	}
	return &Brake{
		fraction:     fraction,
		zoneFraction: groupFraction,
		holders:      make(map[string]holderMark),
		zones:        make(map[string]*tally),
	}
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
	if b.fraction > 0 {
		resumed = b.all.count(mark.keys, d, b.fraction, Scope{Kind: KindBrake}, resumed)
	}
	if b.zoneFraction > 0 {
		z := b.zones[mark.zone]
		if z == nil {
			z = &tally{}
			b.zones[mark.zone] = z
		}
		resumed = z.count(mark.keys, d, b.zoneFraction, Scope{Kind: KindBrake, Group: mark.zone, Grouped: true}, resumed)
		if z.holders == 0 {
			delete(b.zones, mark.zone)
		}
	}
	return resumed
}

// count adds d to the holders of t and to the count of each of keys, then decides again for
// every key whose share changed: all of them when the number of holders changed.
func (t *tally) count(keys []string, d int, f float64, scope Scope, resumed []Scope) []Scope {
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
		limit := f * float64(t.holders)
		switch {
		case !c.paused && share > limit:
			c.paused = true
		case c.paused && (share < limit || c.n == 0):
			c.paused = false
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
		if k := b.all.keys[c.Key]; k != nil && k.paused {
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
