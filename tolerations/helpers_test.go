package tolerations_test

import (
	"math"
	"math/big"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// t0 is the fixed "now" of most tests: tests never read the clock.
var t0 = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)

// discard is the logger handed to k8s.io/api's ToleratesTaint: it logs an error for every
// non-integer Lt/Gt value, which must not reach the test output.
var discard = logr.Discard()

func secs(n int64) *int64 { return &n }

func added(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

func noExec(key string) v1.Taint {
	return v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute}
}

func noExecAt(key string, at time.Time) v1.Taint {
	return v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute, TimeAdded: added(at)}
}

func exists(key string, s *int64) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: s}
}

// upstreamTolerates is kube's own matching, the reference for Tolerates.
func upstreamTolerates(tol *v1.Toleration, taint *v1.Taint, opts tolerations.Options) bool {
	return tol.ToleratesTaint(discard, taint, opts.ComparisonOperators)
}

// kubeMatchingTolerations is a naive copy of kube's v1helper.GetMatchingTolerations applied,
// as the taint eviction controller does, to the node's NoExecute taints only. It is written
// from kube's code, independently of the package under test.
func kubeMatchingTolerations(taints []v1.Taint, tols []v1.Toleration, opts tolerations.Options) (bool, []v1.Toleration) {
	var noExecute []v1.Taint
	for _, t := range taints {
		if t.Effect == v1.TaintEffectNoExecute {
			noExecute = append(noExecute, t)
		}
	}
	if len(noExecute) == 0 {
		return true, []v1.Toleration{}
	}
	if len(tols) == 0 {
		return false, []v1.Toleration{}
	}
	result := []v1.Toleration{}
	for i := range noExecute {
		tolerated := false
		for j := range tols {
			if tols[j].ToleratesTaint(discard, &noExecute[i], opts.ComparisonOperators) {
				result = append(result, tols[j])
				tolerated = true
				break
			}
		}
		if !tolerated {
			return false, []v1.Toleration{}
		}
	}
	return true, result
}

// clampedSeconds is MinTolerationTime's and ObservedDeadline's documented conversion of
// tolerationSeconds: <= 0 is 0, and values too large for a time.Duration are clamped to the
// largest whole second.
func clampedSeconds(s int64) time.Duration {
	const maxSecs = math.MaxInt64 / int64(time.Second)
	if s <= 0 {
		return 0
	}
	return time.Duration(min(s, maxSecs)) * time.Second
}

// bruteDeadline computes Deadline's documented result the slow, obvious way: collect every
// NoExecute taint's deadline, then decide. It uses kube's ToleratesTaint for matching.
func bruteDeadline(taints []v1.Taint, tols []v1.Toleration, now, fallback time.Time, opts tolerations.Options) tolerations.Eviction {
	type candidate struct {
		taint *v1.Taint
		tol   *v1.Toleration
		due   time.Time
	}
	var finite []candidate
	for i := range taints {
		taint := &taints[i]
		if taint.Effect != v1.TaintEffectNoExecute {
			continue
		}
		var tol *v1.Toleration
		for j := range tols {
			if upstreamTolerates(&tols[j], taint, opts) {
				tol = &tols[j]
				break
			}
		}
		if tol == nil {
			return tolerations.Eviction{Verdict: tolerations.EvictNow, At: now, Taint: taint}
		}
		if tol.TolerationSeconds == nil {
			continue
		}
		start := fallback
		if taint.TimeAdded != nil && !taint.TimeAdded.Time.IsZero() {
			start = taint.TimeAdded.Time
		}
		if start.IsZero() || start.After(now) {
			start = now
		}
		finite = append(finite, candidate{taint, tol, exactAfter(start, *tol.TolerationSeconds)})
	}
	if len(finite) == 0 {
		return tolerations.Eviction{}
	}
	best := finite[0]
	for _, c := range finite[1:] {
		if c.due.Before(best.due) {
			best = c
		}
	}
	if !best.due.After(now) {
		return tolerations.Eviction{Verdict: tolerations.EvictNow, At: now, Taint: best.taint, Toleration: best.tol}
	}
	return tolerations.Eviction{Verdict: tolerations.EvictAt, At: best.due, Taint: best.taint, Toleration: best.tol}
}

// kubeObserved is ObservedDeadline's documented result built from the package's own
// building blocks, Match and MinTolerationTime, as kube's processPodOnNode does. It says
// nothing about Eviction.Taint and Eviction.Toleration.
func kubeObserved(taints []v1.Taint, tols []v1.Toleration, since, now time.Time, opts tolerations.Options) (tolerations.Verdict, time.Time) {
	if tolerations.NoExecuteTaints(taints) == nil {
		return tolerations.Stay, time.Time{} // kube keeps no work for an untainted node
	}
	used, ok := tolerations.Match(taints, tols, opts)
	if !ok {
		return tolerations.EvictNow, now
	}
	minTime, expires := tolerations.MinTolerationTime(used)
	if !expires {
		return tolerations.Stay, time.Time{}
	}
	if since.IsZero() || since.After(now) {
		since = now
	}
	due := since.Add(minTime)
	if !due.After(now) {
		return tolerations.EvictNow, now
	}
	return tolerations.EvictAt, due
}

// index returns the index of the element of s that p points to, -1 when p is nil, and -2
// when p points elsewhere (never a wanted index, so such a pointer fails the test).
func index[T any](s []T, p *T) int {
	if p == nil {
		return -1
	}
	for i := range s {
		if &s[i] == p {
			return i
		}
	}
	return -2 // not nil, and not into s
}

// latestUnix is the last Unix second a time.Time holds: its seconds count from year 1 in an
// int64, and year 1 is 62135596800 seconds before 1970.
const latestUnix = math.MaxInt64 - 62135596800 - 1

// exactAfter is Deadline's documented sum: start plus s seconds (none when s <= 0), in
// exact arithmetic, and the latest time a time.Time holds when the sum lies beyond it.
func exactAfter(start time.Time, s int64) time.Time {
	if s <= 0 {
		return start
	}
	if s <= math.MaxInt64/int64(time.Second) {
		return start.Add(time.Duration(s) * time.Second)
	}
	sum := new(big.Int).Add(big.NewInt(start.Unix()), big.NewInt(s))
	if sum.Cmp(big.NewInt(latestUnix)) > 0 {
		sum = big.NewInt(latestUnix)
	}
	return time.Unix(sum.Int64(), int64(start.Nanosecond())).In(start.Location())
}
