package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// runningPod creates a pod on node labelled app=db, and marks it Running and Ready, as a
// kubelet would: the Eviction API lets Pending pods go without asking their budget.
func (s *scene) runningPod(name, node string) *v1.Pod {
	s.t.Helper()
	pod := newPod(s.ns, name, node)
	pod.Labels["app"] = "db"
	pod, err := admin.CoreV1().Pods(s.ns).Create(s.ctx, pod, metav1.CreateOptions{})
	require.NoError(s.t, err)
	now := metav1.Now()
	pod.Status.Phase = v1.PodRunning
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now}}
	pod, err = admin.CoreV1().Pods(s.ns).UpdateStatus(s.ctx, pod, metav1.UpdateOptions{})
	require.NoError(s.t, err)
	return pod
}

// budget creates or changes the PodDisruptionBudget "db" to minAvailable of the pods
// labelled app=db, and writes its status as the disruption controller would for healthy
// ready pods (no such controller runs here): the Eviction API decides from that status.
func (s *scene) budget(minAvailable, healthy int32) {
	s.t.Helper()
	pdbs := admin.PolicyV1().PodDisruptionBudgets(s.ns)
	pdb, err := pdbs.Get(s.ctx, "db", metav1.GetOptions{})
	if err != nil {
		pdb, err = pdbs.Create(s.ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: ptrIntOrString(minAvailable),
				Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			},
		}, metav1.CreateOptions{})
	} else {
		pdb.Spec.MinAvailable = ptrIntOrString(minAvailable)
		pdb, err = pdbs.Update(s.ctx, pdb, metav1.UpdateOptions{})
	}
	require.NoError(s.t, err)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: max(healthy-minAvailable, 0),
		CurrentHealthy:     healthy,
		DesiredHealthy:     minAvailable,
		ExpectedPods:       healthy,
	}
	_, err = pdbs.UpdateStatus(s.ctx, pdb, metav1.UpdateOptions{})
	require.NoError(s.t, err)
}

func ptrIntOrString(n int32) *intstr.IntOrString {
	v := intstr.FromInt32(n)
	return &v
}

// refusedEvictions says whether a request was an eviction of the pod name that its budget
// refused (429 Too Many Requests).
func refusedEvictions(ns, name string) func(auditEvent) bool {
	return func(e auditEvent) bool {
		return writesPod(ns, name)(e) && e.ObjectRef.Subresource == "eviction" && e.code() == http.StatusTooManyRequests
	}
}

// Scenario 6, eviction mode: a budget with minAvailable equal to the replicas blocks the
// eviction; the refusals (429) are retried and the pods stay. Relaxing the budget lets the
// evictions through.
func TestEvictionRespectsBudget(t *testing.T) {
	s := newScene(t)
	node := s.node("n")
	s.runningPod("db-0", node)
	s.runningPod("db-1", node)
	s.budget(2, 2)
	c := startController(t, "controller", "-mode=evict")

	s.taint(node)
	waitAudit(t, c.id, 3, refusedEvictions(s.ns, "db-0"))
	s.assertNotDeleted("db-0")
	s.assertNotDeleted("db-1")
	assert.GreaterOrEqual(t, c.metric(t, outcomes("failed", "TooManyRequests")), 3.0, "refusals the Observer reported")

	s.budget(0, 2)
	s.waitDeleted("db-0")
	s.waitDeleted("db-1")
	for _, name := range []string{"db-0", "db-1"} {
		evicted, err := auditEvents(c.id, func(e auditEvent) bool {
			return writesPod(s.ns, name)(e) && e.ObjectRef.Subresource == "eviction" && e.code() == http.StatusCreated
		})
		require.NoError(t, err)
		assert.Len(t, evicted, 1, "evictions of %s granted", name)
	}
	for _, name := range []string{"db-0", "db-1"} {
		c.waitOutput(t, s.ns+"/"+name+" by evict", failAfter)
	}
}

// Scenario 6, with -pdb-timeout: the budget never relents, and the controller deletes the
// pod that long after the first refusal, as kube's controller would have at once.
func TestEvictionBudgetTimeout(t *testing.T) {
	const timeout = 3 * time.Second
	s := newScene(t)
	node := s.node("n")
	s.runningPod("db-0", node)
	s.budget(1, 1)
	c := startController(t, "controller", "-mode=evict", "-pdb-timeout="+timeout.String())

	s.taint(node)
	first := waitAudit(t, c.id, 1, refusedEvictions(s.ns, "db-0"))[0]
	pod, seen := s.waitDeleted("db-0")
	after := seen.Sub(first.Received)
	t.Logf("deleted %s after the first refusal, with -pdb-timeout=%s", after.Round(time.Millisecond), timeout)
	// The Manager retries with backoff (100 ms, doubling): the attempt after the timeout
	// comes at most one backoff step, about as long as the timeout, later.
	assert.True(t, after >= timeout && after <= 2*timeout+tolerance, "deleted %s after the first refusal, want %s to %s", after, timeout, 2*timeout+tolerance)
	deletes, err := auditEvents(c.id, func(e auditEvent) bool {
		return writesPod(s.ns, "db-0")(e) && e.Verb == "delete" && e.code() < 300
	})
	require.NoError(t, err)
	assert.Len(t, deletes, 1, "a plain delete after the timeout")
	s.assertEvicted(pod)
	c.waitOutput(t, s.ns+"/db-0 by delete-after-pdb-timeout", failAfter)
}
