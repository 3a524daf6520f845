package eviction

import (
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/tolerations"
)

// pending is what the eviction queue keeps per pod besides its deadline.
type pending struct {
	uid   types.UID
	node  string
	since int64 // unix nanoseconds the countdown started, for FromObservation
	due   int64 // unix nanoseconds it was scheduled for (see dueNanos), for the Observer
}

// scheduled is a pod's entry in the schedule, as it was before a decision; ok is false
// when the pod has none pending.
type scheduled struct {
	p  pending
	at time.Time
	ok bool
}

// syncPod brings the schedule of the pod named key in line with its state in the Cache now,
// under the pod's lock. When the Cache fails, it decides from fallback, the state an update
// or a listing carried, and decides again from the Cache after a delay. untainted is the
// reason given when a pending eviction is cancelled because the node is not tainted.
func (m *Manager) syncPod(key types.NamespacedName, fallback *v1.Pod, now time.Time, untainted Reason) {
	defer m.podLocks.lock(key).unlock()
	pod, err := m.cache.Pod(key.Namespace, key.Name)
	// Asked once: IsNotFound allocates, even for nil, and every deleted pod comes here.
	gone := err == nil && pod == nil || err != nil && apierrors.IsNotFound(err)
	if err == nil || gone {
		m.retries.succeeded(func() string { return podRetryKey(key) })
	}
	switch {
	case gone:
		m.deleted.forget(key)
		m.cancel(key, ReasonPodDeleted)
		return
	case err != nil:
		node := ""
		if fallback != nil {
			node = fallback.Spec.NodeName
		}
		m.retries.failed(podRetryKey(key), now, func() { m.shardFor(node).putPod(key, fallback) })
		if fallback == nil { // a delete event
			m.deleted.forget(key)
			m.cancel(key, ReasonPodDeleted)
			return
		}
		pod = fallback
	}
	m.processPod(pod, now, untainted)
}

// processPod schedules, moves or cancels the eviction of pod, in named steps: the taints
// that apply, where the countdown starts, the deadline, whether the pod is skipped, whether
// the schedule holds it already ("unchanged, keep its place"), and scheduling. The pod's
// lock must be held.
func (m *Manager) processPod(pod *v1.Pod, now time.Time, untainted Reason) {
	key := podKey(pod)
	taints, reason := m.taintsFor(pod, untainted)
	if reason != "" {
		m.cancel(key, reason)
		return
	}
	var prev scheduled
	prev.p, prev.at, prev.ok = m.queue.Get(key)
	p := m.countdown(pod, prev, now)
	e := m.deadline(taints, pod, p, now)
	if e.Verdict == tolerations.Stay {
		m.cancel(key, ReasonTolerated)
		return
	}
	if reason, skip := m.skipReason(key, pod); skip {
		if reason == ReasonPodTerminating && m.attempts.running(key, pod.UID) {
			return // most likely its own Deleter call's doing; that call's end reports
		}
		m.skip(key, p, reason)
		return
	}
	var taken scheduled // the eviction a delete worker has taken, if none is pending
	if !prev.ok {
		taken.p, taken.at, taken.ok = m.queue.Running(key)
	}
	if m.keepsPlace(key, p, e, prev, taken, now) {
		return
	}
	m.endTaken(key, taken, p.uid)
	m.schedule(key, p, e.At)
}

// taintsFor returns the NoExecute taints of pod's node, or, when there are none to apply,
// the reason to cancel its eviction: the pod is not bound, or its node is not tainted
// (untainted).
func (m *Manager) taintsFor(pod *v1.Pod, untainted Reason) ([]v1.Taint, Reason) {
	if pod.Spec.NodeName == "" {
		return nil, ReasonPodUnbound
	}
	taints := m.taints.get(pod.Spec.NodeName)
	if len(taints) == 0 {
		return nil, untainted
	}
	return taints, ""
}

// countdown returns the pod's eviction as the schedule is to hold it: its UID, its node and,
// for FromObservation, when its countdown started: when the same pod on the same node was
// first scheduled, or now. The deadline of the same pod on the same node is carried over, so
// that an unchanged eviction compares equal; schedule sets it anew.
func (m *Manager) countdown(pod *v1.Pod, prev scheduled, now time.Time) pending {
	p := pending{uid: pod.UID, node: pod.Spec.NodeName}
	same := prev.ok && prev.p.uid == p.uid && prev.p.node == p.node
	if same {
		p.due = prev.p.due
	}
	if m.opts.DeadlineSource != FromObservation {
		return p
	}
	p.since = now.UnixNano()
	if same {
		p.since = prev.p.since
	}
	return p
}

// deadline applies the configured deadline rule to the eviction p, with taints started (see
// startTaints). The time it returns is in now's location, the clock's.
func (m *Manager) deadline(taints []v1.Taint, pod *v1.Pod, p pending, now time.Time) tolerations.Eviction {
	var e tolerations.Eviction
	if m.opts.DeadlineSource == FromObservation {
		since := now
		if p.since != 0 {
			since = time.Unix(0, p.since)
		}
		e = tolerations.ObservedDeadline(taints, pod.Spec.Tolerations, since, now, m.tolOpts)
	} else {
		e = tolerations.Deadline(taints, pod.Spec.Tolerations, now, now, m.tolOpts)
	}
	e.At = e.At.In(now.Location())
	return e
}

// keepsPlace reports whether the eviction p, due as e says, must keep the place it has in
// the schedule: it is pending for the same pod at the same time, or it is due and already
// waits to run, waits to retry, waits for a token or the brake, or runs. Scheduling it anew
// would report a move that did not happen, would reset the retry backoff of a failing
// eviction, and would give up the token a waiting one holds.
func (m *Manager) keepsPlace(key types.NamespacedName, p pending, e tolerations.Eviction, prev, taken scheduled, now time.Time) bool {
	due := e.Verdict == tolerations.EvictNow
	if prev.ok {
		held := due && m.gate != nil && m.gate.holding(key, p) // waits for a token or the brake
		return prev.p == p && (prev.at.Equal(e.At) || due && !prev.at.After(now) || held)
	}
	// A delete worker that has taken this pod's eviction, begun or not (it may wait for the
	// pod's lock, which the caller holds), will evict it as a new scheduling would.
	return due && (m.attempts.evicting(key, p.uid) || taken.ok && taken.p.uid == p.uid)
}

// schedule puts the eviction p of key in the schedule for at, and reports it. Every
// scheduling goes through here, and reports first, so that an eviction due at once is
// reported Scheduled before a delete worker reports it Started.
func (m *Manager) schedule(key types.NamespacedName, p pending, at time.Time) {
	p.due = dueNanos(at)
	m.dropHold(key)
	m.obs.Scheduled(refOf(key, p), at)
	m.attempts.resume(key)
	m.queue.Schedule(key, p, at)
}

// endTaken ends the eviction taken, which a delete worker has taken from the schedule,
// when it is of another pod of key's name: that pod was replaced. An attempt that has
// begun is cancelled as cancel does it (its end reports); one that has not is taken off the
// queue and reported Cancelled here, since it will never begin.
func (m *Manager) endTaken(key types.NamespacedName, taken scheduled, uid types.UID) {
	if !taken.ok || taken.p.uid == uid {
		return
	}
	m.cancel(key, ReasonPodReplaced)
	if m.queue.Cancel(key) {
		m.obs.Cancelled(refOf(key, taken.p), ReasonPodReplaced)
	}
}

// skip cancels the eviction of key, if any, and reports that the pod p names is skipped.
func (m *Manager) skip(key types.NamespacedName, p pending, reason Reason) {
	m.cancel(key, reason)
	m.obs.Skipped(refOf(key, p), reason)
}

// cancel removes the eviction of key, pending or started, and reports it Cancelled: at once
// when it waits to run, to retry, for a token or for the brake, or when a delete worker has
// just taken it from the schedule (that call then does nothing); when an attempt runs, at
// that attempt's end, unless the attempt deletes the pod (then it reports Succeeded).
func (m *Manager) cancel(key types.NamespacedName, reason Reason) {
	heldP, held := m.dropHold(key) // first: a brake released meanwhile must not put it back
	p, _, pending := m.queue.Get(key)
	a, started := m.attempts.cancel(key, reason)
	if !pending && !started && !held {
		return
	}
	// Cancel also when nothing is pending: an attempt running now is then not retried.
	removed := m.queue.Cancel(key)
	switch {
	case !started:
		if !pending {
			p = heldP
		}
		if !removed { // a delete worker took it and waits for the pod's lock
			m.attempts.close(key, attempt{p: p})
		}
		m.obs.Cancelled(refOf(key, p), reason)
	case a.state == attemptFailed:
		if !removed && reason != ReasonPodDeleted {
			m.attempts.close(key, a) // its retry may have been claimed already
		}
		m.obs.Cancelled(refOf(key, a.p), reason)
	}
}

func podKey(pod *v1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
}

func refOf(key types.NamespacedName, p pending) PodRef {
	return PodRef{Namespace: key.Namespace, Name: key.Name, UID: p.uid, Node: p.node}
}
