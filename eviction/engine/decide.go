package engine

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction/engine/internal/budget"
	"github.com/taintevict/taintevict/tolerations"
)

// rules are an Engine's deadline rules; pure, so safe from any goroutine.
type rules struct {
	source DeadlineSource
	tol    tolerations.Options
}

// decision is: act at At (at or before now: at once) on the binding to Holder; or, with
// Stay, not, for Reason (Skip: the target leaves on its own, and is Skipped, not Cancelled).
type decision struct {
	Stay   bool
	Skip   bool
	Reason Reason
	At     time.Time
	Holder string
}

// decide decides about the target v shows at now, for an update and the recheck alike.
// openOn is the holder of its open eviction ("" for none), since where FromObservation's
// countdown of it started (now for none). It reads nothing else and allocates nothing.
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

// evaluate applies the deadline rule to one binding's started taints (see startTaints).
func (r rules) evaluate(taints []v1.Taint, tols []v1.Toleration, since, now time.Time) tolerations.Eviction {
	if r.source == FromObservation {
		return tolerations.ObservedDeadline(taints, tols, since, now, r.tol)
	}
	return tolerations.Deadline(taints, tols, now, now, r.tol)
}

// causes appends to cs, once each, the NoExecute taints that make the target v shows due
// at now, with their holders' names and groups. It allocates only when cs has no room.
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
