package eviction

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/tolerations"
)

// evict is the eviction queue's work: it rechecks that the pod is still due, then deletes
// it. A nil return ends the eviction; an error makes the queue retry it with backoff. The
// decisions before and after the Deleter call are made under the pod's lock, as every
// decision about the pod is, but not the call itself.
func (m *Manager) evict(ctx context.Context, key types.NamespacedName, p pending) error {
	attempt, call, err := m.beforeDelete(key, p)
	if !call {
		return err
	}
	timedOut, err := m.callDeleter(ctx, refOf(key, p))
	return m.afterDelete(key, p, attempt, timedOut, err)
}

// beforeDelete counts the attempt, rechecks the pod and, for a first attempt, passes the
// rate limits and the brake. It reports Started and returns true when the Deleter is to be
// called; otherwise it reports why not (Skipped, Failed, Delayed, or Succeeded in dry-run
// mode) and returns the error the queue is to retry, if any.
func (m *Manager) beforeDelete(key types.NamespacedName, p pending) (attempt int, call bool, err error) {
	defer m.podLocks.lock(key).unlock()
	ref := refOf(key, p)
	attempt, ok := m.attempts.start(key, p)
	if !ok {
		return 0, false, nil // cancelled, and reported, before this retry began
	}
	c, err := m.recheck(key, p)
	switch {
	case err != nil:
		return attempt, false, m.attemptFailed(key, ref, attempt, err)
	case c.skip:
		m.attempts.end(key)
		m.closeSkipped(key, p, c)
		if !c.at.IsZero() {
			m.schedule(key, p, c.at)
		}
		return attempt, false, nil
	case attempt == 1 && m.gate != nil && m.waits(key, p, c):
		m.attempts.end(key) // not started: it waits for a token or the brake
		return 0, false, nil
	case m.opts.DryRun:
		m.attempts.end(key)
		m.obs.Succeeded(ref, attempt, m.dueTime(p), true)
		return attempt, false, nil
	}
	m.obs.Started(ref, attempt, m.dueTime(p))
	return attempt, true, nil
}

// closeSkipped reports an eviction that the recheck c found must not go. One that a budget
// held is reported Cancelled, not Skipped, unless it is only due later: it was pending, and
// Delayed said so, so it ends as a pending eviction does when the update that the recheck
// saw first comes through (a brake released by a node's recovery and that node's own
// processing race, and the report must not depend on which comes first).
func (m *Manager) closeSkipped(key types.NamespacedName, p pending, c checked) {
	held := m.gate != nil && m.gate.holding(key, p)
	m.dropHold(key)
	ref := refOf(key, p)
	if held && c.at.IsZero() {
		m.obs.Cancelled(ref, c.reason)
		return
	}
	m.obs.Skipped(ref, c.reason)
}

// afterDelete reports the outcome of a Deleter call, and returns the error the queue is to
// retry, if any.
func (m *Manager) afterDelete(key types.NamespacedName, p pending, attempt int, timedOut bool, err error) error {
	defer m.podLocks.lock(key).unlock()
	ref := refOf(key, p)
	if err == nil || IsGone(err) {
		m.attempts.end(key)
		m.recordDeleted(key, p.uid)
		m.obs.Succeeded(ref, attempt, m.dueTime(p), false)
		return nil
	}
	return m.attemptFailed(key, ref, attempt, m.deleteError(ref, timedOut, err))
}

// attemptFailed reports a failed attempt and returns err for the queue to retry; or, when
// the eviction was cancelled while the attempt ran, reports Cancelled and returns nil.
func (m *Manager) attemptFailed(key types.NamespacedName, ref PodRef, attempt int, err error) error {
	if reason, cancelled := m.attempts.failed(key); cancelled {
		m.obs.Cancelled(ref, reason)
		return nil
	}
	m.obs.Failed(ref, attempt, err)
	return err
}

// checked is what the recheck before a delete found: whether the eviction must be skipped,
// and why, with the later time it is due at when it is not due yet; and the pod and node it
// read, when it is not skipped.
type checked struct {
	reason Reason
	skip   bool
	at     time.Time
	pod    *v1.Pod
	node   *v1.Node
}

// recheck reads the pod and its node from the Cache right before the delete and reports
// what it found about the eviction p; or the error of a failed lookup.
func (m *Manager) recheck(key types.NamespacedName, p pending) (checked, error) {
	var c checked
	pod, err := m.cache.Pod(key.Namespace, key.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return c, fmt.Errorf("eviction: recheck pod %s: %w", refOf(key, p), err)
	}
	if c.reason, c.skip = m.recheckPod(key, pod, p); c.skip {
		return c, nil
	}
	node, err := m.cache.Node(p.node)
	if err != nil && !apierrors.IsNotFound(err) {
		return c, fmt.Errorf("eviction: recheck node %s: %w", p.node, err)
	}
	c.reason, c.skip, c.at = m.recheckNode(node, pod, p)
	c.pod, c.node = pod, node
	return c, nil
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
// if so, and the later time it is due at when it is not due yet: a newer state is then on
// its way through the updates, and the pod stays scheduled for that time meanwhile.
func (m *Manager) recheckNode(node *v1.Node, pod *v1.Pod, p pending) (Reason, bool, time.Time) {
	if node == nil {
		return ReasonNodeDeleted, true, time.Time{}
	}
	taints := tolerations.NoExecuteTaints(node.Spec.Taints)
	if len(taints) == 0 {
		return ReasonNotTainted, true, time.Time{}
	}
	now := m.clock.Now()
	e := m.deadline(m.taints.start(node.Name, taints, now), pod, p, now)
	switch e.Verdict {
	case tolerations.Stay:
		return ReasonTolerated, true, time.Time{}
	case tolerations.EvictAt:
		return ReasonNotDue, true, e.At
	}
	return "", false, time.Time{}
}

// deleteError wraps a failed Deleter call's error.
func (m *Manager) deleteError(ref PodRef, timedOut bool, err error) error {
	if timedOut {
		return fmt.Errorf("eviction: delete pod %s: %w after %s: %w", ref, errDeleteTimeout, m.opts.DeleteTimeout, err)
	}
	return fmt.Errorf("eviction: delete pod %s: %w", ref, err)
}

// recordDeleted remembers that the pod key with uid was deleted, while the Cache still shows
// it. The pod's lock must be held, so that the processing of its removal, which reads the
// Cache under the same lock, either comes after and forgets the record, or came before and
// the record is not made. Otherwise a removal seen first would leave a record forever.
func (m *Manager) recordDeleted(key types.NamespacedName, uid types.UID) {
	if pod, err := m.cache.Pod(key.Namespace, key.Name); err == nil && pod != nil && pod.UID == uid {
		m.deleted.add(key, uid)
	}
}
