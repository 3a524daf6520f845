package eviction

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// brake counts, per taint key, the known nodes that carry a NoExecute taint with that key,
// over the whole cluster and per zone, and decides from these counts which keys' evictions
// are paused. A key is paused when more than the fraction of nodes (of the cluster, or of
// one zone) carry it, and resumes when fewer than the fraction do: at exactly the fraction it
// stays as it was, so a cluster hovering there does not flap.
//
// Each node update costs O(its taints) plus, when the number of nodes in a scope changes, a
// look at each key counted in that scope (a cluster has a handful): nothing rescans nodes.
// A brake is not safe for concurrent use; the zero brake is not usable: use newBrake.
type brake struct {
	fraction     float64 // of all known nodes; 0: no cluster-wide rule
	zoneFraction float64 // of the known nodes of each zone; 0: no zone rule
	nodes        map[string]nodeMark
	all          tally
	zones        map[string]*tally
}

// nodeMark is what the brake counted for one node.
type nodeMark struct {
	zone string
	keys []string // distinct keys of its NoExecute taints
}

// tally counts the nodes of one scope, the whole cluster or one zone.
type tally struct {
	nodes int
	keys  map[string]*keyCount
}

// keyCount counts the nodes of a scope that carry a key, and whether that pauses the key.
type keyCount struct {
	n      int
	paused bool
}

// brakeScope names what paused an eviction: a taint key, over the whole cluster (zone
// empty, zoned false) or within one zone.
type brakeScope struct {
	key   string
	zone  string
	zoned bool
}

func newBrake(b Brake) *brake {
	return &brake{
		fraction:     b.Fraction,
		zoneFraction: b.ZoneFraction,
		nodes:        make(map[string]nodeMark),
		zones:        make(map[string]*tally),
	}
}

// zoneOf returns the node's zone label, "" when it has none: nodes without one form a zone
// of their own, as in the node lifecycle controller.
func zoneOf(node *v1.Node) string { return node.Labels[v1.LabelTopologyZone] }

// set records node's zone and NoExecute taint keys, replacing what was recorded for a node
// of that name, and appends to resumed the scopes whose keys stopped being paused.
func (b *brake) set(node *v1.Node, resumed []brakeScope) []brakeScope {
	zone := zoneOf(node)
	old, known := b.nodes[node.Name]
	if known && old.zone == zone && sameKeys(old.keys, node.Spec.Taints) {
		return resumed // the common update, a status change: nothing to count, no allocation
	}
	mark := nodeMark{zone: zone, keys: noExecuteKeys(node.Spec.Taints)}
	if known {
		resumed = b.count(old, -1, resumed)
	}
	b.nodes[node.Name] = mark
	return b.count(mark, +1, resumed)
}

// remove forgets a deleted node and appends to resumed the scopes that stopped pausing.
func (b *brake) remove(name string, resumed []brakeScope) []brakeScope {
	old, known := b.nodes[name]
	if !known {
		return resumed
	}
	delete(b.nodes, name)
	return b.count(old, -1, resumed)
}

// count adds (d = 1) or removes (d = -1) a node with mark in both scopes it belongs to.
func (b *brake) count(mark nodeMark, d int, resumed []brakeScope) []brakeScope {
	if b.fraction > 0 {
		resumed = b.all.count(mark.keys, d, b.fraction, brakeScope{}, resumed)
	}
	if b.zoneFraction > 0 {
		z := b.zones[mark.zone]
		if z == nil {
			z = &tally{}
			b.zones[mark.zone] = z
		}
		resumed = z.count(mark.keys, d, b.zoneFraction, brakeScope{zone: mark.zone, zoned: true}, resumed)
		if z.nodes == 0 {
			delete(b.zones, mark.zone)
		}
	}
	return resumed
}

// count adds d to the nodes of t and to the count of each of keys, then decides again for
// every key whose share changed: all of them when the number of nodes changed.
func (t *tally) count(keys []string, d int, f float64, scope brakeScope, resumed []brakeScope) []brakeScope {
	if t.keys == nil {
		t.keys = make(map[string]*keyCount)
	}
	t.nodes += d
	for _, k := range keys {
		c := t.keys[k]
		if c == nil {
			c = &keyCount{}
			t.keys[k] = c
		}
		c.n += d
	}
	for k, c := range t.keys { // d is never 0: the number of nodes changed
		share := float64(c.n)
		limit := f * float64(t.nodes)
		switch {
		case !c.paused && share > limit:
			c.paused = true
		case c.paused && (share < limit || c.n == 0):
			c.paused = false
			scope.key = k
			resumed = append(resumed, scope)
		}
		if c.n == 0 {
			delete(t.keys, k)
		}
	}
	return resumed
}

// paused returns the first scope that pauses evictions caused by any of keys on a node in
// zone, if one does.
func (b *brake) paused(zone string, keys []string) (brakeScope, bool) {
	for _, k := range keys {
		if c := b.all.keys[k]; c != nil && c.paused {
			return brakeScope{key: k}, true
		}
		if z := b.zones[zone]; z != nil {
			if c := z.keys[k]; c != nil && c.paused {
				return brakeScope{key: k, zone: zone, zoned: true}, true
			}
		}
	}
	return brakeScope{}, false
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
