package eviction

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction/engine"
)

// NodeUpdated takes a node event: old nil for an added node, new nil for a deleted one. It
// queues the node when it was added, deleted or renamed, or when its NoExecute taints or
// its zone changed, and returns at once; other updates, such as heartbeats, are ignored.
// With Options.Brake it also counts the node, O(its taints), and wakes the evictions a
// pause it ends held; with Options.Confirm it first counts what the node's NoExecute taints
// would evict (O(its pods) when they changed) and reads its [ConfirmAnnotation]. Nil for
// both does nothing.
func (m *Manager) NodeUpdated(old, new *v1.Node) {
	gone := old != nil && (new == nil || old.Name != new.Name) // deleted, or renamed
	if m.census != nil {
		if gone {
			m.census.nodeChanged(old.Name, nil)
		}
		if new != nil {
			m.census.nodeChanged(new.Name, new)
		}
	}
	if gone {
		m.e.HolderDeleted(old.Name)
	}
	if new != nil && (gone || old == nil || zoneOf(old) != zoneOf(new) || engine.TaintsChanged(old.Spec.Taints, new.Spec.Taints)) {
		m.e.HolderUpdated(nodeHolder(new))
	}
}

// PodUpdated takes a pod event: old nil for an added pod, new nil for a deleted one. It
// queues the pod when it was added bound to a node, deleted, bound, re-created under the
// same name, or when a field a decision reads changed (tolerations, leaving, owner), and
// returns at once; other changes, such as status, are ignored, as in kube. With
// Options.Confirm it first counts the pod. Nil for both does nothing.
func (m *Manager) PodUpdated(old, new *v1.Pod) {
	if m.census != nil && (old != nil || new != nil) {
		m.census.podChanged(old, new)
	}
	switch {
	case new == nil && old == nil:
		return
	case new == nil:
		m.e.TargetDeleted(old)
	case old == nil:
		if new.Spec.NodeName != "" {
			m.e.TargetUpdated(new)
		}
	case podKey(old) != podKey(new):
		m.PodUpdated(old, nil)
		m.PodUpdated(nil, new)
	case podChanged(old, new):
		m.e.TargetUpdated(new)
	}
}

// podChanged reports whether a pod changed in a field that a decision about it reads: its
// node, UID and tolerations, and what [LeavingReason], [GoneBy] and [PodOwner] read (by
// calling them, so that a field they come to read is never missed here).
func podChanged(old, new *v1.Pod) bool {
	return old.Spec.NodeName != new.Spec.NodeName || old.UID != new.UID ||
		LeavingReason(old) != LeavingReason(new) || !GoneBy(old).Equal(GoneBy(new)) || PodOwner(old) != PodOwner(new) ||
		!tolerationsEqual(old.Spec.Tolerations, new.Spec.Tolerations)
}

// tolerationsEqual reports whether a and b are the same tolerations in the same order, as
// apiequality.Semantic.DeepEqual does, without its reflection. The rest of the struct is
// compared with ==, so that a field a newer API adds is compared too (a pointer by
// address: an unchanged toleration taken as changed is processed once more, never missed).
func tolerationsEqual(a, b []v1.Toleration) bool {
	return slices.EqualFunc(a, b, func(x, y v1.Toleration) bool {
		xs, ys := x.TolerationSeconds, y.TolerationSeconds
		if (xs == nil) != (ys == nil) || xs != nil && *xs != *ys {
			return false
		}
		x.TolerationSeconds, y.TolerationSeconds = nil, nil
		return x == y
	})
}
