package engine

import (
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// holderTable is what the Engine knows of each holder it was told about
// ([Engine.HolderUpdated]) or read from the Source: its group, and its NoExecute taints as
// the holder carries them and as the countdowns use them (see startTaints). A holder that
// carries none is known too, so that a target on it is decided without a lookup. Its lock
// guards the map, and is taken under a stripe lock or alone, never with another; the
// slices it holds and returns are never modified. The zero value is empty and ready.
type holderTable struct {
	mu sync.RWMutex
	m  map[string]knownHolder
}

// knownHolder is one holder's entry: its group, and its NoExecute taints, given as the
// holder carries them and started with TimeAdded set to the time each countdown starts.
// started is given itself when no taint needed a change, the common case.
type knownHolder struct {
	group          string
	given, started []v1.Taint
	// learned: read from the Source, the Engine not told of it; read again at each
	// decision, its taints started against what was read before.
	learned bool
}

// get returns what is known of the holder name.
func (h *holderTable) get(name string) (knownHolder, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	k, ok := h.m[name]
	return k, ok
}

// set records the holder name in group with taints, its NoExecute taints at now, and
// reports whether it had NoExecute taints before. learned says it was read from the Source
// rather than told.
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

// start returns taints, which the holder name carries at now (the NoExecute ones and
// others), reduced to the NoExecute ones and started against what is known of it, without
// storing them: the recheck's view of a holder read from the Source.
func (h *holderTable) start(name string, taints []v1.Taint, now time.Time) []v1.Taint {
	prev, _ := h.get(name)
	if !TaintsChanged(prev.given, taints) {
		// The common case, the holder's update processed already: no copy of its
		// NoExecute taints per recheck (a node has NoSchedule twins of them).
		return prev.started
	}
	taints = tolerations.NoExecuteTaints(taints)
	if len(taints) == 0 {
		return nil
	}
	return startTaints(taints, prev, now)
}

// startTaints returns taints with each TimeAdded set to the time the taint's countdown
// starts: the earlier of its TimeAdded and the time this Engine first saw that taint on
// that holder. First sight is when the same taint (see sameTaint) first came in prev, or
// else now. So a taint without TimeAdded, or with a TimeAdded in the future (clock skew),
// counts from first sight and stays pinned there: its deadline does not slide with the
// clock. It copies taints only when it has to change one, so the result may share memory
// with taints and must not be modified (like the informer objects it comes from).
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

// sameTaint reports whether a and b are the same taint: the same key, value and effect, and
// the same TimeAdded (both unset, or equal). A taint whose TimeAdded changed was added again.
func sameTaint(a, b v1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect &&
		(a.TimeAdded.IsZero() && b.TimeAdded.IsZero() || a.TimeAdded.Equal(b.TimeAdded))
}

// TaintsChanged reports whether the NoExecute taints of old and new differ in anything the
// Engine's decisions read: their order, keys, values or TimeAdded (a nil and a zero
// TimeAdded are the same). Adapters use it to leave out holder updates that change nothing
// for the Engine, such as a node's status heartbeats. It does not allocate.
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
