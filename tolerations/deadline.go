package tolerations

import (
	"iter"
	"math"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
)

// maxSeconds is the largest tolerationSeconds that fits a time.Duration (about 292 years).
const maxSeconds = int64(math.MaxInt64 / int64(time.Second))

// seconds converts tolerationSeconds to a duration: <= 0 is 0 (evict now, as in Kubernetes),
// and values beyond maxSeconds are clamped to it rather than overflow, as kube's would.
func seconds(s int64) time.Duration {
	return time.Duration(min(max(s, 0), maxSeconds)) * time.Second
}

// maxUnix is the latest Unix second a time.Time holds: it counts seconds from year 1 in an
// int64.
const maxUnix = math.MaxInt64 - 62135596800 - 1

// after returns t plus s > 0 seconds in full, saturating at the latest time a time.Time
// holds. Clamping s to a Duration instead would put the deadline of a TimeAdded more than
// 292 years ago in the past, and evict at once a pod tolerated for longer than that.
func after(t time.Time, s int64) time.Time {
	if s <= maxSeconds {
		return t.Add(time.Duration(s) * time.Second)
	}
	u := t.Unix()
	if u > maxUnix-s { // no overflow: s <= math.MaxInt64
		u = maxUnix
	} else {
		u += s
	}
	return time.Unix(u, int64(t.Nanosecond())).In(t.Location())
}

// MinTolerationTime returns how long the tolerations in used (normally [Match]'s result)
// let a pod stay on a node, by kube's rule (getMinTolerationTime): with no tolerations, or
// any tolerationSeconds <= 0, 0 (evict now); with every tolerationSeconds nil, expires
// false (forever; shortest means nothing); otherwise the smallest tolerationSeconds. Forever
// is told by expires, as [context.Context]'s Deadline tells "no deadline", not by kube's
// magic -1.
func MinTolerationTime(used []v1.Toleration) (shortest time.Duration, expires bool) {
	if len(used) == 0 {
		return 0, true
	}
	for i := range used {
		if s := used[i].TolerationSeconds; s != nil && (!expires || seconds(*s) < shortest) {
			shortest, expires = seconds(*s), true
		}
	}
	return shortest, expires
}

// timed yields, in order, each NoExecute taint of taints that no toleration tolerates (with
// a nil toleration) or that the deciding toleration tolerates for a while (with it): what
// Deadline and ObservedDeadline read, the taints tolerated forever left out.
func timed(taints []v1.Taint, tolerations []v1.Toleration, opts Options) iter.Seq2[*v1.Taint, *v1.Toleration] {
	return func(yield func(*v1.Taint, *v1.Toleration) bool) {
		for i := range taints {
			if taints[i].Effect != v1.TaintEffectNoExecute {
				continue
			}
			tol := deciding(tolerations, &taints[i], opts)
			if (tol == nil || tol.TolerationSeconds != nil) && !yield(&taints[i], tol) {
				return
			}
		}
	}
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

// String returns the verdict's name, or "Verdict(n)" for an unknown value.
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
	// At is when: now for EvictNow, the deadline for EvictAt, the zero time for Stay.
	At time.Time
	// Taint decided the outcome: for EvictNow the first taint not tolerated or whose
	// toleration ran out first, for EvictAt the one whose toleration runs out first, for Stay
	// nil. It points into the caller's taints.
	Taint *v1.Taint
	// Toleration decides how long Taint is tolerated (see [Match]); nil when Taint is not
	// tolerated, and for Stay. It points into the caller's tolerations.
	Toleration *v1.Toleration
}

// Deadline returns when a pod with tolerations must leave a node with taints, by the rule
// that survives a controller restart: the earliest, over the NoExecute taints, of the time
// the taint was added plus the tolerationSeconds of the toleration that decides it (see
// [Match]). Under [DeviceRules] it is kube's device taint eviction time for one allocated
// device: its taints, and the tolerations of the request that allocated it.
//
//   - A taint's countdown starts at the earlier of its TimeAdded and the time the taint was
//     first seen on that node, which Deadline takes from fallback when TimeAdded is nil or
//     zero (now when fallback is zero too); a TimeAdded later than now (clock skew) counts
//     as now. A caller that asks again must pass, as TimeAdded, the earlier of the two, as
//     [github.com/taintevict/taintevict/eviction.Manager] does: else a future TimeAdded
//     slides with the clock. (Kube's device controller waits for a future TimeAdded.)
//   - An untolerated NoExecute taint, or a tolerationSeconds <= 0, gives EvictNow, as in
//     Kubernetes; a nil tolerationSeconds never runs out. Seconds beyond a [time.Duration]
//     count in full, up to the latest time a [time.Time] holds, where kube's arithmetic
//     overflows.
//   - A deadline at or before now gives EvictNow; no deadline at all gives Stay.
//   - Taints of other effects are ignored, so a node's whole taint list may be passed.
//
// Deadline does not allocate, unless a value compared by Lt or Gt is beyond int64.
func Deadline(taints []v1.Taint, tolerations []v1.Toleration, now, fallback time.Time, opts Options) Eviction {
	var out Eviction
	for taint, tol := range timed(taints, tolerations, opts) {
		if tol == nil {
			return Eviction{Verdict: EvictNow, At: now, Taint: taint}
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
// kube-controller-manager's rule: since plus [MinTolerationTime] of the tolerations that
// [Match] uses, where since is when the caller first scheduled this eviction; a zero since,
// or one later than now, counts as now. It never reads TimeAdded, so a caller that restarts
// and forgets since restarts every countdown (kubernetes#108268: pods on a powered-off node
// left after 9 minutes, not 5, because kube-controller-manager restarted): use it only to
// reproduce kube. Under [DeviceRules] the device rules choose the tolerations, but the
// countdown still starts at since. Like [Deadline] it gives EvictNow for an untolerated
// NoExecute taint and Stay when there is none, and does not allocate.
func ObservedDeadline(taints []v1.Taint, tolerations []v1.Toleration, since, now time.Time, opts Options) Eviction {
	var out Eviction
	var minSecs int64
	for taint, tol := range timed(taints, tolerations, opts) {
		if tol == nil {
			return Eviction{Verdict: EvictNow, At: now, Taint: taint}
		}
		if s := max(*tol.TolerationSeconds, 0); out.Taint == nil || s < minSecs {
			minSecs, out.Taint, out.Toleration = s, taint, tol
		}
	}
	if out.Taint == nil {
		return Eviction{}
	}
	if since.IsZero() || since.After(now) {
		since = now
	}
	out.Verdict, out.At = EvictAt, since.Add(seconds(minSecs))
	if !out.At.After(now) {
		out.Verdict, out.At = EvictNow, now
	}
	return out
}
