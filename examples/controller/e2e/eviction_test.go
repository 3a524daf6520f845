package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// tolerance is how far from its deadline an eviction may be seen: the controller's timer,
// its two API calls and the watch that tells the test.
const tolerance = time.Second

// startController runs the controller command against the shared server as a user of its
// own (see controllerUser).
func startController(t *testing.T, name string, args ...string) *process {
	t.Helper()
	user, rc := controllerUser(t, name)
	return startAs(t, name, identity{user: user}, rc, args...)
}

// startAs runs the controller command with the client configuration rc, which authenticates
// as id.
func startAs(t *testing.T, name string, id identity, rc *rest.Config, args ...string) *process {
	t.Helper()
	p := startProcess(t, name, append([]string{"-kubeconfig", writeKubeconfig(t, rc)}, args...)...)
	p.id = id
	return p
}

// assertEvicted checks what kube's controller leaves on a pod it evicted: the condition
// DisruptionTarget=True with kube's reason and message, written before the delete, and the
// Event that says so.
func (s *scene) assertEvicted(pod *v1.Pod) {
	s.t.Helper()
	c := condition(pod, v1.DisruptionTarget)
	if assert.NotNil(s.t, c, "DisruptionTarget condition on the deleted pod %s", pod.Name) {
		assert.Equal(s.t, v1.ConditionTrue, c.Status)
		assert.Equal(s.t, kubeReason, c.Reason)
		assert.Equal(s.t, kubeMessage, c.Message)
	}
	e := s.waitEvent(pod, "Marking for deletion Pod "+s.ns+"/"+pod.Name)
	assert.Equal(s.t, v1.EventTypeNormal, e.Type)
}

// assertNotEvicted checks that the pod is there, neither deleted nor marked.
func (s *scene) assertNotEvicted(name string) {
	s.t.Helper()
	pod := s.getPod(name)
	assert.Nil(s.t, pod.DeletionTimestamp, "pod %s deleted", name)
	assert.Nil(s.t, condition(pod, v1.DisruptionTarget), "pod %s marked", name)
}

// assertNotDeleted checks that the pod is there and not deleted.
func (s *scene) assertNotDeleted(name string) {
	s.t.Helper()
	assert.Nil(s.t, s.getPod(name).DeletionTimestamp, "pod %s deleted", name)
}

// assertAt checks that an eviction seen at seen happened at want, not before and at most
// tolerance after.
func assertAt(t *testing.T, what string, seen, want time.Time) {
	t.Helper()
	late := seen.Sub(want)
	t.Logf("%s seen %s after its deadline", what, late.Round(time.Millisecond))
	assert.True(t, late >= 0 && late <= tolerance, "%s seen %s after its deadline %s, want 0 to %s", what, late, want.Format(time.TimeOnly), tolerance)
}

// starter runs a controller process for a test: as a user with every right
// (startController), or as the service account of deploy/ (see TestLeastPrivilege).
type starter func(t *testing.T, name string, args ...string) *process

// Scenario 1: a pod without a toleration is evicted at once, as kube does it.
func TestEvictUntolerated(t *testing.T) { evictUntolerated(t, startController) }

func evictUntolerated(t *testing.T, start starter) {
	s := newScene(t)
	node := s.node("n")
	s.pod("web", node)
	start(t, "controller")

	tainted := time.Now()
	s.taint(node)
	pod, seen := s.waitDeleted("web")
	s.assertEvicted(pod)
	assertAt(t, "the untolerated pod's eviction", seen, tainted)
}

// Scenario 2: a 5 s toleration is evicted at TimeAdded + 5 s, not earlier.
func TestEvictAtTolerationDeadline(t *testing.T) {
	s := newScene(t)
	node := s.node("n")
	s.pod("web", node, tolerate(ptr.To[int64](5)))
	startController(t, "controller")

	added := s.taint(node)
	pod, seen := s.waitDeleted("web")
	s.assertEvicted(pod)
	assertAt(t, "the 5 s toleration's eviction", seen, added.Add(5*time.Second))
}

// Scenario 3: removing the taint before the deadline cancels the eviction and says so.
// A pod on a second node, tainted at the same time with a longer toleration, shows when the
// cancelled pod's deadline has passed.
func TestUntaintCancels(t *testing.T) { untaintCancels(t, startController) }

func untaintCancels(t *testing.T, start starter) {
	s := newScene(t)
	node, other := s.node("n"), s.node("witness")
	pod := s.pod("web", node, tolerate(ptr.To[int64](4)))
	s.pod("witness", other, tolerate(ptr.To[int64](5)))
	c := start(t, "controller")

	s.taint(node)
	s.taint(other)
	c.waitOutput(t, "scheduled  "+s.ns+"/web", failAfter)
	s.untaint(node)
	s.waitEvent(pod, "Cancelling deletion of Pod "+s.ns+"/web")

	s.waitDeleted("witness")
	s.assertNotEvicted("web")
}

// Scenario 4: a forever toleration is never evicted, and neither is a pod that has
// Succeeded; a pod with a short toleration on the same node shows that the controller acted
// on the node.
func TestNeverEvicted(t *testing.T) {
	s := newScene(t)
	node := s.node("n")
	s.pod("forever", node, tolerate(nil))
	done := s.pod("done", node)
	done.Status.Phase = v1.PodSucceeded
	_, err := admin.CoreV1().Pods(s.ns).UpdateStatus(s.ctx, done, metav1.UpdateOptions{})
	require.NoError(t, err)
	s.pod("witness", node, tolerate(ptr.To[int64](3)))
	startController(t, "controller")

	s.taint(node)
	s.waitDeleted("witness")
	s.assertNotEvicted("forever")
	s.assertNotEvicted("done")
}
