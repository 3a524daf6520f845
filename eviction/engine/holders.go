package engine

import (
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// holderTaints holds the NoExecute taints of the holders the Engine knows, as each holder
// carries them and as the countdowns use them (see startTaints). It is safe for concurrent
// use; the zero value is empty and ready. The slices it holds and returns must not be
// modified.
type holderTaints struct {
	mu sync.RWMutex
	m  map[string]knownTaints
}

// knownTaints are one holder's NoExecute taints: given as the holder carries them, started
// with TimeAdded set to the time each countdown starts. started is given itself when no
// taint needed a change, the common case.
type knownTaints struct {
	given, started []v1.Taint
}

// get returns the started NoExecute taints of holder, nil for a holder without any.
func (h *holderTaints) get(holder string) []v1.Taint {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.m[holder].started
}

// set stores taints, the NoExecute taints holder has at now, and reports whether it had
// taints before. No taints forgets the holder.
func (h *holderTaints) set(holder string, taints []v1.Taint, now time.Time) (had bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev, had := h.m[holder]
	if len(taints) == 0 {
		delete(h.m, holder)
		return had
	}
	if h.m == nil {
		h.m = make(map[string]knownTaints)
	}
	h.m[holder] = knownTaints{given: taints, started: startTaints(taints, prev, now)}
	return had
}

// start returns taints, which holder carries at now (the NoExecute ones and others),
// reduced to the NoExecute ones and started against the taints known for it, without
// storing them.
func (h *holderTaints) start(holder string, taints []v1.Taint, now time.Time) []v1.Taint {
	h.mu.RLock()
	prev := h.m[holder]
	h.mu.RUnlock()
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
func startTaints(taints []v1.Taint, prev knownTaints, now time.Time) []v1.Taint {
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
