package engine

import (
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// holderTable is what the Engine knows of each holder it was told of or read from the
// Source, untainted ones too, so that a target on one is decided without a lookup. Its lock
// guards the map; the slices it holds are never modified. The zero value is ready.
type holderTable struct {
	mu sync.RWMutex
	m  map[string]knownHolder
}

// knownHolder is one holder's group and NoExecute taints, as given and as started (see
// startTaints).
type knownHolder struct {
	group          string
	given, started []v1.Taint
	learned        bool // read from the Source, not told: read again at each decision
}

func (h *holderTable) get(name string) (knownHolder, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	k, ok := h.m[name]
	return k, ok
}

// set records the holder name's group and NoExecute taints at now, and reports whether it
// had NoExecute taints before.
func (h *holderTable) set(name, group string, taints []v1.Taint, now time.Time, learned bool) (had bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev, known := h.m[name]
	if h.m == nil {
		h.m = make(map[string]knownHolder)
	}
	k := knownHolder{group: group, learned: learned}
	if len(taints) > 0 {
		k.given, k.started = taints, startTaints(taints, prev, now)
	}
	h.m[name] = k
	return known && len(prev.given) > 0
}

// remove forgets the holder name, and reports whether it had NoExecute taints.
func (h *holderTable) remove(name string) (had bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev, known := h.m[name]
	delete(h.m, name)
	return known && len(prev.given) > 0
}

// start returns the NoExecute ones of the holder name's taints at now, started against
// what is known of it, without storing them: the recheck's view.
func (h *holderTable) start(name string, taints []v1.Taint, now time.Time) []v1.Taint {
	prev, _ := h.get(name)
	if !TaintsChanged(prev.given, taints) {
		return prev.started // the common case: no copy per recheck
	}
	taints = tolerations.NoExecuteTaints(taints)
	if len(taints) == 0 {
		return nil
	}
	return startTaints(taints, prev, now)
}

// startTaints returns taints with each TimeAdded set to where its countdown starts (see
// FromTimeAdded): the earlier of its TimeAdded and when this Engine first saw it on the
// holder (in prev, or else now). It copies taints only to change one: the result must not
// be modified.
func startTaints(taints []v1.Taint, prev knownHolder, now time.Time) []v1.Taint {
	var out []v1.Taint
	for i := range taints {
		t := &taints[i]
		first := now
		if j := slices.IndexFunc(prev.given, func(p v1.Taint) bool { return sameTaint(p, *t) }); j >= 0 {
			first = prev.started[j].TimeAdded.Time
		}
		if !t.TimeAdded.IsZero() && !t.TimeAdded.After(first) {
			continue // the common case: the taint counts from its TimeAdded
		}
		if out == nil {
			out = slices.Clone(taints)
		}
		start := metav1.NewTime(first)
		out[i].TimeAdded = &start
	}
	if out == nil {
		return taints
	}
	return out
}

// sameTaint reports whether a and b are the same taint: key, value, effect and TimeAdded (a
// taint whose TimeAdded changed was added again).
func sameTaint(a, b v1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect &&
		(a.TimeAdded.IsZero() && b.TimeAdded.IsZero() || a.TimeAdded.Equal(b.TimeAdded))
}

// TaintsChanged reports whether the NoExecute taints of old and new differ in anything the
// Engine reads: their order, keys, values or TimeAdded (nil and zero are the same), so that
// an adapter can leave out updates such as a node's heartbeats. It does not allocate.
func TaintsChanged(old, new []v1.Taint) bool {
	i, j := 0, 0
	for {
		for i < len(old) && old[i].Effect != v1.TaintEffectNoExecute {
			i++
		}
		for j < len(new) && new[j].Effect != v1.TaintEffectNoExecute {
			j++
		}
		switch {
		case i == len(old) || j == len(new):
			return i != len(old) || j != len(new)
		case !sameTaint(old[i], new[j]):
			return true
		}
		i, j = i+1, j+1
	}
}
