package eviction

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/taintevict/taintevict/tolerations"
)

// NodeUpdated takes a node event: old nil for an added node, new nil for a deleted one. It
// queues the node when it was added or deleted, or when its NoExecute taints changed, and
// returns at once. Nil for both does nothing.
func (m *Manager) NodeUpdated(old, new *v1.Node) {
	switch {
	case new == nil && old == nil:
		return
	case new == nil:
		m.shardFor(old.Name).putNode(old.Name, nodeEvent{})
	case old == nil || !slices.EqualFunc(tolerations.NoExecuteTaints(old.Spec.Taints), tolerations.NoExecuteTaints(new.Spec.Taints), taintEqual):
		m.shardFor(new.Name).putNode(new.Name, nodeEvent{node: new})
	}
}

func taintEqual(a, b v1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect &&
		(a.TimeAdded == nil) == (b.TimeAdded == nil) && (a.TimeAdded == nil || a.TimeAdded.Equal(b.TimeAdded))
}

// PodUpdated takes a pod event: old nil for an added pod, new nil for a deleted one. It
// queues the pod when it was added bound to a node, deleted, bound, re-created under the
// same name, or when its tolerations changed or it started leaving (finished or being
// deleted), and returns at once. Other changes, such as status, are ignored, as in kube.
// Nil for both does nothing.
func (m *Manager) PodUpdated(old, new *v1.Pod) {
	switch {
	case new == nil && old == nil:
		return
	case new == nil:
		m.shardFor(old.Spec.NodeName).putPod(podKey(old), nil)
	case old == nil:
		if new.Spec.NodeName != "" {
			m.shardFor(new.Spec.NodeName).putPod(podKey(new), new)
		}
	case podKey(old) != podKey(new):
		m.PodUpdated(old, nil)
		m.PodUpdated(nil, new)
	case podChanged(old, new):
		m.shardFor(new.Spec.NodeName).putPod(podKey(new), new)
	}
}

// podChanged reports whether a pod changed in a field that a decision about it reads: its
// node, its UID, its tolerations, or its own reason to be skipped ([leavingReason], so that
// a new skip reason that reads a pod field is seen here without being listed twice).
func podChanged(old, new *v1.Pod) bool {
	return old.Spec.NodeName != new.Spec.NodeName || old.UID != new.UID ||
		leavingReason(old) != leavingReason(new) ||
		!apiequality.Semantic.DeepEqual(old.Spec.Tolerations, new.Spec.Tolerations)
}
