package main

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// refusals says which of the evictions of --mode=evict the Eviction API would refuse, given
// pdbs as they are now: for each pod of evicted, in the order of the evictions, the name of
// the PodDisruptionBudget that would refuse it (names joined by commas for a pod that
// several cover), or "". In that order, each eviction that a PodDisruptionBudget covers
// takes one of its status.disruptionsAllowed, and one that finds none left is refused. As
// the API server does: a pod that is Pending passes; a pod that is not Ready passes under
// the policy AlwaysAllow, and under IfHealthyBudget (the default) only while the budget has
// currentHealthy >= desiredHealthy, taking none; a pod covered by several budgets is
// refused. Budgets are not replenished: the pods that replace the evicted ones are not
// known. It is arithmetic on top of the engine's timeline; an eviction it refuses is
// retried by the controller with backoff, or deleted once its PDB timeout has passed.
func refusals(evicted []*v1.Pod, pdbs []*policyv1.PodDisruptionBudget) []string {
	type budget struct {
		pdb     *policyv1.PodDisruptionBudget
		sel     labels.Selector
		allowed int32
	}
	var budgets []*budget
	for _, p := range pdbs {
		if p == nil || p.Spec.Selector == nil {
			continue // a nil selector selects no pod in policy/v1
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil {
			continue // the API server would not have stored it
		}
		budgets = append(budgets, &budget{pdb: p, sel: sel, allowed: p.Status.DisruptionsAllowed})
	}
	out := make([]string, len(evicted))
	for i, pod := range evicted {
		if pod == nil || pod.Status.Phase == v1.PodPending {
			continue
		}
		var covering []*budget
		for _, b := range budgets {
			if b.pdb.Namespace == pod.Namespace && b.sel.Matches(labels.Set(pod.Labels)) {
				covering = append(covering, b)
			}
		}
		switch {
		case len(covering) == 0:
		case len(covering) > 1:
			var names []string
			for _, b := range covering {
				names = append(names, b.pdb.Name)
			}
			slices.Sort(names)
			out[i] = strings.Join(names, ",")
		case !ready(pod):
			b := covering[0]
			if b.pdb.Spec.UnhealthyPodEvictionPolicy == nil || *b.pdb.Spec.UnhealthyPodEvictionPolicy != policyv1.AlwaysAllow {
				if b.pdb.Status.CurrentHealthy < b.pdb.Status.DesiredHealthy {
					out[i] = b.pdb.Name
				}
			}
		case covering[0].allowed <= 0:
			out[i] = covering[0].pdb.Name
		default:
			covering[0].allowed--
		}
	}
	return out
}

// ready reports whether the pod's Ready condition is True.
func ready(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
