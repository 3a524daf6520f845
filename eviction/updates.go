package eviction

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction/engine"
)

// NodeUpdated takes a node event: old nil for an added node, new nil for a deleted one. It
// queues the node when it was added or deleted, or when its NoExecute taints or its zone
// changed, and returns at once; other updates, such as status heartbeats, are ignored. With
// Options.Brake set, it also counts the node's taint keys and zone (O(its taints)), and puts
// back in the schedule the evictions that a brake it releases held. With Options.Confirm,
// it first counts what the node's NoExecute taints would evict (O(its pods) when they
// changed, looked up in the Cache) and reads its [ConfirmAnnotation]. Nil for both does
// nothing.
func (m *Manager) NodeUpdated(old, new *v1.Node) {
	if m.census != nil {
		switch {
		case new != nil:
			if old != nil && old.Name != new.Name {
				m.census.nodeChanged(old.Name, nil)
			}
			m.census.nodeChanged(new.Name, new)
		case old != nil:
			m.census.nodeChanged(old.Name, nil)
		}
	}
	switch {
	case new == nil && old == nil:
	case new == nil:
		m.e.HolderDeleted(old.Name)
	case old != nil && old.Name != new.Name:
		m.e.HolderDeleted(old.Name)
		m.e.HolderUpdated(nodeHolder(new))
	case old == nil || zoneOf(old) != zoneOf(new) || engine.TaintsChanged(old.Spec.Taints, new.Spec.Taints):
		m.e.HolderUpdated(nodeHolder(new))
	}
}

// PodUpdated takes a pod event: old nil for an added pod, new nil for a deleted one. It
// queues the pod when it was added bound to a node, deleted, bound, re-created under the
// same name, or when its tolerations changed or it started leaving (finished or being
// deleted), and returns at once. Other changes, such as status, are ignored, as in kube.
// With Options.Confirm, it first counts the pod for the taints of its node (O(those
// taints)). Nil for both does nothing.
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
// node, its UID, its tolerations, or its own reason to be skipped ([LeavingReason], so that
// a new skip reason that reads a pod field is seen here without being listed twice), when
// it is to be gone ([GoneBy]), and its owner ([PodOwner], which the budgets per owner read).
func podChanged(old, new *v1.Pod) bool {
	return old.Spec.NodeName != new.Spec.NodeName || old.UID != new.UID ||
		LeavingReason(old) != LeavingReason(new) || !GoneBy(old).Equal(GoneBy(new)) || PodOwner(old) != PodOwner(new) ||
		!tolerationsEqual(old.Spec.Tolerations, new.Spec.Tolerations)
}

// tolerationsEqual reports whether a and b are the same tolerations in the same order, as
// apiequality.Semantic.DeepEqual does (nil and empty are equal; TolerationSeconds compares
// the numbers, not the pointers), without its reflection: most pod updates change only the
// status, and come here, where DeepEqual cost about 2 µs and 22 allocations per update.
// The rest of the struct is compared with ==, so that a field a newer API adds is compared
// too: a field that is not comparable would not compile, and a pointer would compare by
// address, which takes an unchanged toleration as changed (processed once more, never
// missed).
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
