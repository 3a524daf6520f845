package whatif

import (
	"math"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// Match is one NoExecute taint of a holder and what a target's tolerations make of it:
// the why of a [Fate], never its verdict (the engine gives that).
type Match struct {
	// Taint is the holder's NoExecute taint.
	Taint v1.Taint
	// Toleration decides how long Taint is tolerated ([tolerations.Match]); nil when none
	// tolerates it. Index is its index in the target's tolerations, else -1.
	Toleration *v1.Toleration
	Index      int
	// Since is where the countdown starts: the taint's TimeAdded (FromTimeAdded), or the
	// start when it has none, one in the future, or the source is [engine.FromObservation].
	Since         time.Time
	FromTimeAdded bool
	// Forever says that Toleration tolerates Taint with no tolerationSeconds.
	Forever bool
	// Deadline is when Toleration runs out: Since plus its tolerationSeconds (Since for 0
	// or less); the start when none tolerates it; zero when Forever.
	Deadline time.Time
}

// Why returns, for each NoExecute taint of taints in order, the toleration of tols that
// decides it and when that runs out, counted from start as the engine counts with source:
// kube's rules, computed with [tolerations.Match]. It explains a verdict; it does not give
// one (a budget, or a pod that is leaving, changes what happens).
func Why(taints []v1.Taint, tols []v1.Toleration, start time.Time, source engine.DeadlineSource, opts tolerations.Options) []Match {
	var out []Match
	for i, t := range taints {
		if t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		m := Match{Taint: t, Index: -1, Since: start}
		if source == engine.FromTimeAdded && t.TimeAdded != nil && !t.TimeAdded.IsZero() && !t.TimeAdded.After(start) {
			m.Since, m.FromTimeAdded = t.TimeAdded.Time, true
		}
		used, ok := tolerations.Match(taints[i:i+1], tols, opts)
		if !ok {
			m.Deadline = start
			out = append(out, m)
			continue
		}
		// Match's copy shares the original's TolerationSeconds pointer: == finds it.
		m.Index = slices.Index(tols, used[0])
		if m.Index >= 0 {
			m.Toleration = &tols[m.Index]
		}
		switch s := used[0].TolerationSeconds; {
		case s == nil:
			m.Forever = true
		case *s <= 0:
			m.Deadline = m.Since
		case *s > maxSeconds: // beyond a time.Duration, centuries: as good as forever here
			m.Deadline = m.Since.AddDate(int(*s/(365*24*3600)), 0, 0)
		default:
			m.Deadline = m.Since.Add(time.Duration(*s) * time.Second)
		}
		out = append(out, m)
	}
	return out
}

// maxSeconds is the largest tolerationSeconds that fits a time.Duration.
const maxSeconds = int64(math.MaxInt64 / int64(time.Second))
