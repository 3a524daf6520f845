package eviction

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// causes appends to keys the keys of the NoExecute taints that make a pod with tols due at
// now: those it does not tolerate, and those whose toleration has run out. Each key appears
// once. since is where FromObservation's countdown started (ignored for FromTimeAdded);
// taints must have their TimeAdded set to where their countdowns start. It allocates only when keys has no room.
func causes(keys []string, taints []v1.Taint, tols []v1.Toleration, src DeadlineSource, since, now time.Time, opts tolerations.Options) []string {
	for i := range taints {
		one := taints[i : i+1]
		var e tolerations.Eviction
		if src == FromObservation {
			e = tolerations.ObservedDeadline(one, tols, since, now, opts)
		} else {
			e = tolerations.Deadline(one, tols, now, now, opts)
		}
		if e.Verdict == tolerations.EvictNow && !slices.Contains(keys, taints[i].Key) {
			keys = append(keys, taints[i].Key)
		}
	}
	return keys
}
