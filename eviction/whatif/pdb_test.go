package whatif_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/taintevict/taintevict/eviction/whatif"
)

func TestRefusePDBs(t *testing.T) {
	ready := func(p *v1.Pod, app string) *v1.Pod {
		p.Labels = map[string]string{"app": app}
		p.Status.Phase = v1.PodRunning
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		return p
	}
	unready := func(p *v1.Pod) *v1.Pod { p.Status.Conditions[0].Status = v1.ConditionFalse; return p }
	pods := []*v1.Pod{
		ready(pod("a", "web-1", "n1"), "web"),
		ready(pod("a", "web-2", "n1", tol(down, ptr.To[int64](10))), "web"),
		ready(pod("a", "web-3", "n1", tol(down, ptr.To[int64](20))), "web"),
		unready(ready(pod("a", "db-1", "n1"), "db")),
		ready(pod("a", "both-1", "n1"), "both"),
		func() *v1.Pod {
			p := ready(pod("a", "web-pending", "n1"), "web")
			p.Status.Phase = v1.PodPending
			return p
		}(),
		ready(pod("b", "web-1", "n1"), "web"), // another namespace: no budget
	}
	pdb := func(name, app string, allowed, healthy, desired int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: healthy, DesiredHealthy: desired},
		}
	}
	both := pdb("both-b", "both", 5, 5, 1)
	res, err := whatif.Nodes(context.Background(), whatif.Cluster{Nodes: []*v1.Node{node("n1", "")}, Pods: whatif.NewIndex(pods)},
		whatif.Change{"n1": {noExecute(down, nil)}}, whatif.Options{Start: start})
	require.NoError(t, err)
	res.RefusePDBs([]*policyv1.PodDisruptionBudget{
		pdb("web", "web", 2, 3, 1), pdb("db", "db", 0, 0, 1), pdb("both-a", "both", 5, 5, 1), both,
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "selects-nothing"}},
	})
	got := map[string]string{}
	for _, p := range res.Pods {
		got[p.Key().String()] = p.RefusedBy
	}
	assert.Equal(t, map[string]string{
		"a/web-1": "", "a/web-pending": "", "a/web-2": "", // the first two evictions the budget allows; a Pending pod passes
		"a/web-3":  "web",           // none left
		"a/db-1":   "db",            // not ready, and the budget is not healthy
		"a/both-1": "both-a,both-b", // two budgets: the API refuses
		"b/web-1":  "",
	}, got)
}
