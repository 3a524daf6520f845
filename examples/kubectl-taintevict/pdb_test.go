package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestRefusals: the Eviction API's arithmetic of PodDisruptionBudgets over evictions in
// their order.
func TestRefusals(t *testing.T) {
	ready := func(name, app string) *v1.Pod {
		p := testPod("a", name, "n1")
		p.Labels = map[string]string{"app": app}
		p.Status.Phase = v1.PodRunning
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		return p
	}
	unready := ready("db-1", "db")
	unready.Status.Conditions[0].Status = v1.ConditionFalse
	pending := ready("web-pending", "web")
	pending.Status.Phase = v1.PodPending
	other := ready("web-1", "web")
	other.Namespace = "b" // another namespace: no budget
	evicted := []*v1.Pod{ready("web-1", "web"), pending, ready("web-2", "web"), ready("web-3", "web"), unready, ready("both-1", "both"), other}
	budget := func(name, app string, allowed, healthy, desired int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: healthy, DesiredHealthy: desired},
		}
	}
	got := refusals(evicted, []*policyv1.PodDisruptionBudget{
		budget("web", "web", 2, 3, 1), budget("db", "db", 0, 0, 1), budget("both-a", "both", 5, 5, 1), budget("both-b", "both", 5, 5, 1),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "selects-nothing"}},
	})
	assert.Equal(t, []string{
		"", "", "", // the first two evictions the budget allows; a Pending pod passes
		"web",           // none left
		"db",            // not ready, and the budget is not healthy
		"both-a,both-b", // two budgets: the API refuses
		"",
	}, got)
}
