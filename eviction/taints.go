package eviction

import (
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeTaints holds the NoExecute taints of the nodes the Manager knows, each with its
// TimeAdded set (see stampTaints). It is safe for concurrent use; the zero value is empty
// and ready. The slices it holds and returns must not be modified.
type nodeTaints struct {
	mu sync.RWMutex
	m  map[string][]v1.Taint
}

// get returns the known NoExecute taints of node, nil for a node without any.
func (n *nodeTaints) get(node string) []v1.Taint {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.m[node]
}

// set stores taints, the NoExecute taints node has now, stamped, and reports whether node
// had taints before. No taints forgets the node.
func (n *nodeTaints) set(node string, taints []v1.Taint, now time.Time) (had bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	prev, had := n.m[node]
	if len(taints) == 0 {
		delete(n.m, node)
		return had
	}
	if n.m == nil {
		n.m = make(map[string][]v1.Taint)
	}
	n.m[node] = stampTaints(taints, prev, now)
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

// stamp returns taints, which node has now, stamped against the taints known for it,
// without storing them.
func (n *nodeTaints) stamp(node string, taints []v1.Taint, now time.Time) []v1.Taint {
	return stampTaints(taints, n.get(node), now)
}

// stampTaints returns taints where a missing TimeAdded is taken from the same taint in prev,
// or else set to now: the countdown of a taint without TimeAdded starts when the Manager
// first sees it. It copies taints only when it has to stamp one, so the result may share
// memory with taints and must not be modified (like the informer objects it comes from).
func stampTaints(taints, prev []v1.Taint, now time.Time) []v1.Taint {
	if !slices.ContainsFunc(taints, func(t v1.Taint) bool { return t.TimeAdded.IsZero() }) {
		return taints // the common case: nothing to stamp, nothing to copy
	}
	out := make([]v1.Taint, len(taints))
	copy(out, taints)
	for i := range out {
		if !out[i].TimeAdded.IsZero() {
			continue
		}
		stamp := now
		for j := range prev {
			if prev[j].Key == out[i].Key && prev[j].Value == out[i].Value && prev[j].Effect == out[i].Effect {
				stamp = prev[j].TimeAdded.Time
				break
			}
		}
		t := metav1.NewTime(stamp)
		out[i].TimeAdded = &t
	}
	return out
}
