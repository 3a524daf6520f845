package tolerations

import (
	"math"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
)

// maxSeconds is the largest tolerationSeconds that fits a time.Duration; larger values are
// clamped to it (about 292 years) instead of overflowing, as kube's own arithmetic would.
const maxSeconds = int64(math.MaxInt64 / int64(time.Second))

// seconds converts a tolerationSeconds value to a duration: values <= 0 become 0 (evict
// now, as in Kubernetes) and values too large for a time.Duration are clamped.
func seconds(s int64) time.Duration {
	switch {
	case s <= 0:
		return 0
	case s > maxSeconds:
		return time.Duration(maxSeconds) * time.Second
	}
	return time.Duration(s) * time.Second
}

// maxUnix is the latest Unix second a time.Time holds: it counts seconds from year 1 in an
// int64.
const maxUnix = math.MaxInt64 - 62135596800 - 1

// after returns t plus s seconds, s > 0, exactly: where s is too large for a time.Duration
// (over 292 years) it adds whole seconds, and it saturates at the latest time a time.Time
// holds. Clamping s instead would move the deadline of a TimeAdded more than 292 years ago
// into the past, and evict at once a pod that tolerates the taint for longer than that.
func after(t time.Time, s int64) time.Time {
	if s <= maxSeconds {
		return t.Add(time.Duration(s) * time.Second)
	}
	u := t.Unix()
	if u > maxUnix-s { // maxUnix-s does not overflow: s <= math.MaxInt64
		u = maxUnix
	} else {
		u += s
	}
	return time.Unix(u, int64(t.Nanosecond())).In(t.Location())
}

// MinTolerationTime returns how long the tolerations in used let a pod stay on a node, by
// kube's rule (getMinTolerationTime in kube-controller-manager):
//
//   - no tolerations: 0, expires true (evict now);
//   - any tolerationSeconds <= 0: 0, expires true;
//   - every tolerationSeconds nil: expires false (the pod may stay forever; shortest is 0
//     and means nothing);
//   - otherwise the smallest tolerationSeconds, expires true.
//
// Forever is reported by expires rather than by a magic negative duration, the way
// [context.Context]'s Deadline reports "no deadline". used is normally the result of [Match].
func MinTolerationTime(used []v1.Toleration) (shortest time.Duration, expires bool) {
	if len(used) == 0 {
		return 0, true
	}
	for i := range used {
		s := used[i].TolerationSeconds
		if s == nil {
			continue
		}
		d := seconds(*s)
		if !expires || d < shortest {
			shortest, expires = d, true
		}
		if d == 0 {
			return 0, true
		}
	}
	return shortest, expires
}

// Verdict says whether and when a pod must leave a node. The zero value is [Stay].
type Verdict uint8

const (
	// Stay means the pod is never evicted: the node has no NoExecute taint, or the pod
	// tolerates every one of them forever.
	Stay Verdict = iota
	// EvictNow means the pod must leave now: a NoExecute taint is not tolerated, or a
	// toleration has run out.
	EvictNow
	// EvictAt means the pod must leave at [Eviction.At], which is after now.
	EvictAt
)

// String returns the verdict's name.
func (v Verdict) String() string {
	switch v {
	case Stay:
		return "Stay"
	case EvictNow:
		return "EvictNow"
	case EvictAt:
		return "EvictAt"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Eviction is the outcome for one pod on one node. The zero value means [Stay].
type Eviction struct {
	// Verdict says whether and when the pod must leave.
	Verdict Verdict
	// At is when the pod must leave: now for EvictNow, the deadline for EvictAt, and the
	// zero time for Stay.
	At time.Time
	// Taint is the taint that decided the outcome: for EvictNow the first taint that is not
	// tolerated or whose toleration ran out first, for EvictAt the taint whose toleration
	// runs out first, for Stay nil. It points into the taints the caller passed.
	Taint *v1.Taint
	// Toleration is the toleration that decides how long Taint is tolerated (see [Match]),
	// nil when Taint is not tolerated or for Stay. It points into the tolerations the caller
	// passed.
	Toleration *v1.Toleration
}

// Deadline returns when a pod with tolerations must leave a node with taints, by the rule
// that makes evictions survive a controller restart: for every NoExecute taint, the time the
// taint was added plus the tolerationSeconds of the toleration that decides it under
// opts.Rules (see [Match]: under [NodeRules] the first that tolerates it); the pod's deadline
// is the earliest of these. Under [DeviceRules] it is kube's device taint eviction time for
// one allocated device (its taints and the tolerations of the request that allocated it); a
// pod or claim using several devices leaves at the earliest over them.
//
//   - A taint's countdown starts at the earlier of its TimeAdded and the time the taint was
//     first seen on that node: a TimeAdded in the future (clock skew) counts from first
//     sight and stays pinned there; after a restart, first sight is the restart. Deadline
//     takes first sight from fallback when TimeAdded is nil or zero (now when fallback is
//     zero too), and counts a TimeAdded later than now as now. A caller that asks again
//     later must pass, as TimeAdded, the earlier of the two, as
//     [github.com/taintevict/taintevict/eviction.Manager] does; otherwise a TimeAdded in
//     the future slides with the clock.
//   - A NoExecute taint that no toleration tolerates gives EvictNow. (Under DeviceRules
//     kube's device controller then evicts at the taint's TimeAdded, which here is at most
//     now; for a TimeAdded in the future, kube waits until it, and Deadline, as for nodes,
//     counts it as now.)
//   - A toleration with tolerationSeconds <= 0 has run out at once (EvictNow), as in
//     Kubernetes; one with nil tolerationSeconds never runs out. Seconds too large for a
//     [time.Duration] (over 292 years) count in full, where kube's arithmetic overflows: the
//     deadline is TimeAdded plus all of them, up to the latest time a [time.Time] holds, so
//     a TimeAdded centuries back never makes such a toleration run out.
//   - A deadline at or before now gives EvictNow; no deadline at all gives Stay.
//   - Taints of other effects are ignored, so a node's whole taint list may be passed.
//
// Deadline does not allocate.
func Deadline(taints []v1.Taint, tolerations []v1.Toleration, now, fallback time.Time, opts Options) Eviction {
	var out Eviction
	for i := range taints {
		taint := &taints[i]
		if taint.Effect != v1.TaintEffectNoExecute {
			continue
		}
		tol := deciding(tolerations, taint, opts)
		if tol == nil {
			return Eviction{Verdict: EvictNow, At: now, Taint: taint}
		}
		if tol.TolerationSeconds == nil {
			continue
		}
		added := fallback
		if !taint.TimeAdded.IsZero() { // nil or zero: unset (a zero metav1.Time marshals as null)
			added = taint.TimeAdded.Time
		}
		if added.IsZero() || added.After(now) {
			added = now
		}
		due := added
		if s := *tol.TolerationSeconds; s > 0 {
			due = after(added, s)
		}
		if out.Taint == nil || due.Before(out.At) {
			out = Eviction{Verdict: EvictAt, At: due, Taint: taint, Toleration: tol}
		}
	}
	if out.Verdict == EvictAt && !out.At.After(now) {
		out.Verdict, out.At = EvictNow, now
	}
	return out
}

// ObservedDeadline returns when a pod with tolerations must leave a node with taints by
// kube-controller-manager's own rule: since plus [MinTolerationTime] of the tolerations
// that [Match] uses, where since is when the caller first scheduled this eviction (now, the
// first time). A zero since, or one later than now, counts as now. Under [DeviceRules] the
// tolerations that count are those of the device rules, but the countdown still starts at
// since; kube's device controller starts it at TimeAdded, as [Deadline] does.
//
// Unlike [Deadline], the taints' TimeAdded is never read, so a caller that restarts and
// forgets since restarts every countdown: a pod that tolerates a taint for 300 s can stay
// for up to 300 s after each restart (kubernetes#108268: pods on a powered-off node left 9
// minutes later, not 5, because kube-controller-manager restarted). Use it only to
// reproduce kube exactly. Like kube, it returns EvictNow when any NoExecute taint is not
// tolerated, and Stay when there is no NoExecute taint. It does not allocate.
func ObservedDeadline(taints []v1.Taint, tolerations []v1.Toleration, since, now time.Time, opts Options) Eviction {
	var (
		minSecs  int64
		expires  bool
		decider  *v1.Taint
		decided  *v1.Toleration
		anyTaint bool
	)
	for i := range taints {
		taint := &taints[i]
		if taint.Effect != v1.TaintEffectNoExecute {
			continue
		}
		anyTaint = true
		tol := deciding(tolerations, taint, opts)
		if tol == nil {
			return Eviction{Verdict: EvictNow, At: now, Taint: taint}
		}
		if tol.TolerationSeconds == nil {
			continue
		}
		s := max(*tol.TolerationSeconds, 0)
		if !expires || s < minSecs {
			minSecs, expires, decider, decided = s, true, taint, tol
		}
	}
	if !anyTaint || !expires {
		return Eviction{}
	}
	if since.IsZero() || since.After(now) {
		since = now
	}
	due := since.Add(seconds(minSecs))
	if !due.After(now) {
		return Eviction{Verdict: EvictNow, At: now, Taint: decider, Toleration: decided}
	}
	return Eviction{Verdict: EvictAt, At: due, Taint: decider, Toleration: decided}
}
