package eviction

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/timedqueue"
	"github.com/taintevict/taintevict/tolerations"
)

// errDeleteTimeout is the cause of a Deleter context cancelled by Options.DeleteTimeout.
var errDeleteTimeout = errors.New("eviction: Deleter call timed out")

// evict is the eviction queue's work: it rechecks that the pod is still due, then deletes
// it. A nil return ends the eviction; an error makes the queue retry it with backoff.
func (m *Manager) evict(ctx context.Context, key types.NamespacedName, p pending) error {
	ref := refOf(key, p)
	attempt := m.nextAttempt(key, p.uid)
	done := func() { m.clearAttempt(key) }

	pod, err := m.cache.Pod(key.Namespace, key.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return m.failed(ref, attempt, fmt.Errorf("eviction: recheck pod %s: %w", ref, err))
	}
	reason, skip := m.recheckPod(pod, p)
	if !skip && m.deleted.has(key, p.uid) {
		reason, skip = ReasonPodTerminating, true
	}
	if !skip {
		var node *v1.Node
		node, err = m.cache.Node(p.node)
		if err != nil && !apierrors.IsNotFound(err) {
			return m.failed(ref, attempt, fmt.Errorf("eviction: recheck node %s: %w", p.node, err))
		}
		reason, skip = m.recheckNode(key, node, pod, p)
	}
	if skip {
		done()
		m.obs.Skipped(ref, reason)
		return nil
	}

	if m.opts.DryRun {
		done()
		m.obs.Succeeded(ref, attempt, true)
		return nil
	}
	m.obs.Started(ref, attempt)
	timedOut, err := m.callDeleter(ctx, ref)
	if err == nil || IsGone(err) {
		done()
		m.recordDeleted(key, p.uid)
		m.obs.Succeeded(ref, attempt, false)
		return nil
	}
	if timedOut {
		err = fmt.Errorf("eviction: delete pod %s: %w after %s: %w", ref, errDeleteTimeout, m.opts.DeleteTimeout, err)
	} else {
		err = fmt.Errorf("eviction: delete pod %s: %w", ref, err)
	}
	return m.failed(ref, attempt, err)
}

// recheckPod reports why pod, as the Cache has it now, must not be evicted for p, if so.
func (m *Manager) recheckPod(pod *v1.Pod, p pending) (Reason, bool) {
	switch {
	case pod == nil:
		return ReasonPodDeleted, true
	case pod.UID != p.uid:
		return ReasonPodReplaced, true
	case pod.Spec.NodeName != p.node:
		return ReasonPodMoved, true
	}
	return leavingReason(pod)
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
	m.nodesMu.RLock()
	known := m.nodes[node.Name]
	m.nodesMu.RUnlock()
	now := m.clock.Now()
	taints = stampTaints(taints, known, now)
	since := now
	if p.since != 0 {
		since = time.Unix(0, p.since)
	}
	e := m.deadline(taints, pod, since, now)
	switch e.Verdict {
	case tolerations.Stay:
		return ReasonTolerated, true
	case tolerations.EvictAt:
		// Due later than scheduled: a newer state is on its way through the updates; keep
		// the pod scheduled for the later time meanwhile.
		if m.queue.Schedule(key, p, e.At) {
			m.obs.Scheduled(refOf(key, p), e.At)
		}
		return ReasonNotDue, true
	}
	return "", false
}

// callDeleter calls the Deleter with a context bounded by Options.DeleteTimeout and reports
// whether that timeout fired. A panic of the Deleter is returned as a
// *timedqueue.PanicError, so that it is reported and retried like any other failure, and the
// timeout is released either way.
func (m *Manager) callDeleter(ctx context.Context, ref PodRef) (timedOut bool, err error) {
	dctx, stop := m.withDeleteTimeout(ctx)
	defer func() {
		if r := recover(); r != nil {
			err = &timedqueue.PanicError{Value: r, Stack: debug.Stack()}
		}
		timedOut = stop()
	}()
	return false, m.deleter.Delete(dctx, ref)
}

// withDeleteTimeout returns a context for one Deleter call, cancelled after
// Options.DeleteTimeout on the Manager's clock, and a stop function that releases it and
// reports whether the timeout fired. No goroutine of it outlives stop.
func (m *Manager) withDeleteTimeout(ctx context.Context) (context.Context, func() bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	if m.opts.DeleteTimeout < 0 {
		return ctx, func() bool { cancel(nil); return false }
	}
	fired := func() bool { return errors.Is(context.Cause(ctx), errDeleteTimeout) }
	if c, ok := m.clock.(clock.WithDelayedExecution); ok {
		t := c.AfterFunc(m.opts.DeleteTimeout, func() { cancel(errDeleteTimeout) })
		return ctx, func() bool { t.Stop(); f := fired(); cancel(nil); return f }
	}
	t := m.clock.NewTimer(m.opts.DeleteTimeout)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-t.C():
			cancel(errDeleteTimeout)
		case <-ctx.Done():
		}
	}()
	return ctx, func() bool {
		t.Stop()
		f := fired()
		cancel(nil)
		<-exited
		return f
	}
}

func (m *Manager) failed(ref PodRef, attempt int, err error) error {
	m.obs.Failed(ref, attempt, err)
	return err
}

// attempts counts the attempts of the eviction of one pod, by UID, while it runs or fails.
type attempts struct {
	uid types.UID
	n   int
}

// nextAttempt counts an attempt of evicting the pod key with uid and returns its number.
func (m *Manager) nextAttempt(key types.NamespacedName, uid types.UID) int {
	m.attemptsMu.Lock()
	defer m.attemptsMu.Unlock()
	a := m.attempts[key]
	if a.uid != uid {
		a = attempts{uid: uid}
	}
	a.n++
	m.attempts[key] = a
	return a.n
}

// evicting reports whether an eviction of the pod key with uid runs or has failed and waits
// to retry.
func (m *Manager) evicting(key types.NamespacedName, uid types.UID) bool {
	m.attemptsMu.Lock()
	defer m.attemptsMu.Unlock()
	a, ok := m.attempts[key]
	return ok && a.uid == uid
}

func (m *Manager) clearAttempt(key types.NamespacedName) {
	m.attemptsMu.Lock()
	delete(m.attempts, key)
	m.attemptsMu.Unlock()
}

// recordDeleted remembers that the pod key with uid was deleted, while the Cache still shows
// it: under the pod's lock, so that the processing of its removal, which reads the Cache
// under the same lock, either comes after and forgets the record, or came before and the
// record is not made. Otherwise a removal seen first would leave a record forever.
func (m *Manager) recordDeleted(key types.NamespacedName, uid types.UID) {
	defer m.lockPod(key)()
	if pod, err := m.cache.Pod(key.Namespace, key.Name); err == nil && pod != nil && pod.UID == uid {
		m.deleted.add(key, uid)
	}
}
