package eviction

import (
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeTaints holds the NoExecute taints of the nodes the Manager knows, as the node carries
// them and as the countdowns use them (see startTaints). It is safe for concurrent use; the
// zero value is empty and ready. The slices it holds and returns must not be modified.
type nodeTaints struct {
	mu sync.RWMutex
	m  map[string]knownTaints
}

// knownTaints are one node's NoExecute taints: given as the node carries them, started with
// TimeAdded set to the time each countdown starts. started is given itself when no taint
// needed a change, the common case.
type knownTaints struct {
	given, started []v1.Taint
}

// get returns the started NoExecute taints of node, nil for a node without any.
func (n *nodeTaints) get(node string) []v1.Taint {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.m[node].started
}

// set stores taints, the NoExecute taints node has at now, and reports whether node had
// taints before. No taints forgets the node.
func (n *nodeTaints) set(node string, taints []v1.Taint, now time.Time) (had bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	prev, had := n.m[node]
	if len(taints) == 0 {
		delete(n.m, node)
		return had
	}
	if n.m == nil {
		n.m = make(map[string]knownTaints)
	}
	n.m[node] = knownTaints{given: taints, started: startTaints(taints, prev, now)}
	return had
}

// remove forgets node and reports whether it had taints.
func (n *nodeTaints) remove(node string) (had bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, had = n.m[node]
	delete(n.m, node)
	return had
}

// start returns taints, which node carries at now, started against the taints known for
// it, without storing them.
func (n *nodeTaints) start(node string, taints []v1.Taint, now time.Time) []v1.Taint {
	n.mu.RLock()
	prev := n.m[node]
	n.mu.RUnlock()
	return startTaints(taints, prev, now)
}

// startTaints returns taints with each TimeAdded set to the time the taint's countdown
// starts: the earlier of its TimeAdded and the time this Manager first saw that taint on
// that node. First sight is when the same taint (key, value, effect and TimeAdded) first
// came in prev, or else now. So a taint without TimeAdded, or with a TimeAdded in the future
// (clock skew), counts from first sight and stays pinned there: its deadline does not slide
// with the clock. It copies taints only when it has to change one, so the result may share
// memory with taints and must not be modified (like the informer objects it comes from).
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
