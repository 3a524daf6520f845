package engine

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction/engine/internal/budget"
	"github.com/taintevict/taintevict/tolerations"
)

// rules are the deadline rules of an Engine: where countdowns start, and how tolerations
// match taints. They are pure: every method may be called from any goroutine.
type rules struct {
	source DeadlineSource
	tol    tolerations.Options
}

// decision is what decide makes of a target at an instant: act at At (at or before now:
// at once), on the binding to Holder; or, with Stay, never, for Reason (Skip: the target
// leaves on its own, and an open eviction of it is Skipped rather than Cancelled).
type decision struct {
	Stay   bool
	Skip   bool
	Reason Reason
	At     time.Time
	Holder string
}

// decide decides about the target v shows, at now: the one function that does, for an
// update and for the recheck right before acting alike. openOn is the holder of the
// target's open eviction ("" for none), and since where FromObservation's countdown of it
// started (now for none). It reads nothing but its arguments, and allocates nothing.
func (r rules) decide(v *view, openOn string, since, now time.Time) decision {
	switch {
	case !v.exists:
		return decision{Stay: true, Reason: ReasonTargetDeleted}
	case v.target.Leaving != "":
		return decision{Stay: true, Skip: true, Reason: v.target.Leaving}
	case len(v.target.Bindings) == 0:
		return decision{Stay: true, Reason: ReasonUnbound}
	}
	var (
		best    tolerations.Eviction
		holder  string
		tainted bool
	)
	for i := range v.target.Bindings {
		taints := v.holders[i].taints
		if len(taints) == 0 {
			continue
		}
		tainted = true
		e := r.evaluate(taints, v.target.Bindings[i].Tolerations, since, now)
		switch {
		case e.Verdict == tolerations.Stay, best.Verdict == tolerations.EvictNow:
		case e.Verdict == tolerations.EvictNow, best.Verdict == tolerations.Stay, e.At.Before(best.At):
			best, holder = e, v.target.Bindings[i].Holder
		}
	}
	switch {
	case best.Verdict != tolerations.Stay:
		return decision{At: best.At.In(now.Location()), Holder: holder}
	case tainted:
		return decision{Stay: true, Reason: ReasonTolerated}
	case openOn != "" && v.lost(openOn):
		return decision{Stay: true, Reason: ReasonHolderDeleted}
	}
	return decision{Stay: true, Reason: ReasonNotTainted}
}

// evaluate applies the deadline rule to one binding: taints (started: their TimeAdded set
// to where their countdowns start, see startTaints) against tols. since is where
// FromObservation's countdown started; FromTimeAdded ignores it.
func (r rules) evaluate(taints []v1.Taint, tols []v1.Toleration, since, now time.Time) tolerations.Eviction {
	if r.source == FromObservation {
		return tolerations.ObservedDeadline(taints, tols, since, now, r.tol)
	}
	return tolerations.Deadline(taints, tols, now, now, r.tol)
}

// causes appends to cs the NoExecute taints that make the target v shows due at now, on
// each binding: those it does not tolerate, and those whose toleration has run out, with
// the name and group of the holder that carries them. Each appears once. It allocates only
// when cs has no room.
func (r rules) causes(cs []budget.Cause, v *view, since, now time.Time) []budget.Cause {
	for i, b := range v.target.Bindings {
		h := &v.holders[i]
		for j := range h.taints {
			e := r.evaluate(h.taints[j:j+1], b.Tolerations, since, now)
			c := budget.Cause{Holder: b.Holder, Key: h.taints[j].Key, Group: h.group}
			if e.Verdict == tolerations.EvictNow && !slices.Contains(cs, c) {
				cs = append(cs, c)
			}
		}
	}
	return cs
}
