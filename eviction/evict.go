package eviction

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/tolerations"
)

// evict is the eviction queue's work: it rechecks that the pod is still due, then deletes
// it. A nil return ends the eviction; an error makes the queue retry it with backoff.
func (m *Manager) evict(ctx context.Context, key types.NamespacedName, p pending) error {
	ref := refOf(key, p)
	attempt := m.attempts.next(key, p.uid)
	reason, skip, err := m.recheck(key, p)
	if err != nil {
		return m.failed(ref, attempt, err)
	}
	if skip {
		m.attempts.end(key)
		m.obs.Skipped(ref, reason)
		return nil
	}
	if m.opts.DryRun {
		m.attempts.end(key)
		m.obs.Succeeded(ref, attempt, true)
		return nil
	}
	m.obs.Started(ref, attempt)
	timedOut, err := m.callDeleter(ctx, ref)
	if err == nil || IsGone(err) {
		m.attempts.end(key)
		m.recordDeleted(key, p.uid)
		m.obs.Succeeded(ref, attempt, false)
		return nil
	}
	return m.failed(ref, attempt, m.deleteError(ref, timedOut, err))
}

// recheck reads the pod and its node from the Cache right before the delete and reports
// whether the eviction p must be skipped, and why; or the error of a failed lookup.
func (m *Manager) recheck(key types.NamespacedName, p pending) (Reason, bool, error) {
	pod, err := m.cache.Pod(key.Namespace, key.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", false, fmt.Errorf("eviction: recheck pod %s: %w", refOf(key, p), err)
	}
	if reason, skip := m.recheckPod(key, pod, p); skip {
		return reason, true, nil
	}
	node, err := m.cache.Node(p.node)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", false, fmt.Errorf("eviction: recheck node %s: %w", p.node, err)
	}
	reason, skip := m.recheckNode(key, node, pod, p)
	return reason, skip, nil
}

// recheckPod reports why pod, as the Cache has it now, must not be evicted for p, if so.
func (m *Manager) recheckPod(key types.NamespacedName, pod *v1.Pod, p pending) (Reason, bool) {
	switch {
	case pod == nil:
		return ReasonPodDeleted, true
	case pod.UID != p.uid:
		return ReasonPodReplaced, true
	case pod.Spec.NodeName != p.node:
		return ReasonPodMoved, true
	}
	return m.skipReason(key, pod)
}

// recheckNode reports why the pod must not be evicted from node, as the Cache has it now,
// if so. When the pod turns out to be due later, it is scheduled again.
func (m *Manager) recheckNode(key types.NamespacedName, node *v1.Node, pod *v1.Pod, p pending) (Reason, bool) {
	if node == nil {
		return ReasonNodeDeleted, true
	}
	taints := tolerations.NoExecuteTaints(node.Spec.Taints)
	if len(taints) == 0 {
		return ReasonNotTainted, true
	}
	now := m.clock.Now()
	e := m.deadline(m.taints.stamp(node.Name, taints, now), pod, p, now)
	switch e.Verdict {
	case tolerations.Stay:
		return ReasonTolerated, true
	case tolerations.EvictAt:
		// Due later than scheduled: a newer state is on its way through the updates; keep
		// the pod scheduled for the later time meanwhile.
		if prev, at, ok := m.queue.Get(key); !ok || prev != p || !at.Equal(e.At) {
			m.schedule(key, p, e.At)
		}
		return ReasonNotDue, true
	}
	return "", false
}

// deleteError wraps a failed Deleter call's error.
func (m *Manager) deleteError(ref PodRef, timedOut bool, err error) error {
	if timedOut {
		return fmt.Errorf("eviction: delete pod %s: %w after %s: %w", ref, errDeleteTimeout, m.opts.DeleteTimeout, err)
	}
	return fmt.Errorf("eviction: delete pod %s: %w", ref, err)
}

func (m *Manager) failed(ref PodRef, attempt int, err error) error {
	m.obs.Failed(ref, attempt, err)
	return err
}

// recordDeleted remembers that the pod key with uid was deleted, while the Cache still shows
// it: under the pod's lock, so that the processing of its removal, which reads the Cache
// under the same lock, either comes after and forgets the record, or came before and the
// record is not made. Otherwise a removal seen first would leave a record forever.
func (m *Manager) recordDeleted(key types.NamespacedName, uid types.UID) {
	defer m.podLocks.lock(key)()
	if pod, err := m.cache.Pod(key.Namespace, key.Name); err == nil && pod != nil && pod.UID == uid {
		m.deleted.add(key, uid)
	}
}
