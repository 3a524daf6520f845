package engine

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// rules are the deadline rules of an Engine: where countdowns start, and how tolerations
// match taints. They are pure: every method may be called from any goroutine.
type rules struct {
	source DeadlineSource
	tol    tolerations.Options
}

// evaluate applies the deadline rule to one binding: taints (started: their TimeAdded set to
// where their countdowns start, see startTaints) against tols. since is where
// FromObservation's countdown started; FromTimeAdded ignores it.
func (r rules) evaluate(taints []v1.Taint, tols []v1.Toleration, since, now time.Time) tolerations.Eviction {
	if r.source == FromObservation {
		return tolerations.ObservedDeadline(taints, tols, since, now, r.tol)
	}
	return tolerations.Deadline(taints, tols, now, now, r.tol)
}

// verdict is the outcome over all of a target's bindings.
type verdict struct {
	// e is the earliest outcome over the bindings: EvictNow if any binding is due now,
	// else the earliest EvictAt, else Stay. Its time is in now's location.
	e tolerations.Eviction
	// holder is the holder of the binding that decides e ("" for Stay).
	holder string
	// tainted reports whether any bound holder carries a NoExecute taint.
	tainted bool
}

// judge returns the verdict over bindings, whose holders carry the started NoExecute taints
// taints[i]. It does not allocate.
func (r rules) judge(bindings []Binding, taints [][]v1.Taint, since, now time.Time) verdict {
	var out verdict
	for i := range bindings {
		if len(taints[i]) == 0 {
			continue
		}
		out.tainted = true
		e := r.evaluate(taints[i], bindings[i].Tolerations, since, now)
		switch {
		case e.Verdict == tolerations.Stay, out.e.Verdict == tolerations.EvictNow:
			continue
		case e.Verdict == tolerations.EvictNow, out.e.Verdict == tolerations.Stay, e.At.Before(out.e.At):
			out.e, out.holder = e, bindings[i].Holder
		}
	}
	out.e.At = out.e.At.In(now.Location())
	return out
}

// cause is a taint key that makes a target due, on a holder of group: what the budgets
// count (TaintRateLimits per key, the brake per key and group, Options.Pauser all three).
type cause struct {
	key, group, holder string
}

// causes appends to cs the keys of the NoExecute taints that make a target due at now, on
// each binding: those it does not tolerate, and those whose toleration has run out, with
// the group and name of the holder that carries them (groups[i] for bindings[i]). Each
// appears once. It allocates only when cs has no room.
func (r rules) causes(cs []cause, bindings []Binding, taints [][]v1.Taint, groups []string, since, now time.Time) []cause {
	for i := range bindings {
		for j := range taints[i] {
			e := r.evaluate(taints[i][j:j+1], bindings[i].Tolerations, since, now)
			c := cause{key: taints[i][j].Key, group: groups[i], holder: bindings[i].Holder}
			if e.Verdict == tolerations.EvictNow && !slices.Contains(cs, c) {
				cs = append(cs, c)
			}
		}
	}
	return cs
}
