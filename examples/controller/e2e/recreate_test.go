package e2e

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// Scenario 5: the pod is deleted and re-created under the same name after the controller
// decided to evict it and before its request reaches the server, once before the write that
// marks the pod and once before the delete. The new pod tolerates the taint forever: it
// must be neither marked nor deleted. The race is forced by a proxy between the controller
// and the API server, so it is the API server that must reject the stale request, on the
// old pod's UID.
func TestRecreatedPodIsNotDeleted(t *testing.T) {
	for _, tc := range []struct {
		name string
		// hooked says whether r is the request before which the pod is replaced.
		hooked func(r *http.Request, path string) bool
		// audited says whether e is that request in the audit log.
		audited func(e auditEvent) bool
	}{
		{
			"before the mark",
			func(r *http.Request, path string) bool {
				return r.Method != http.MethodGet && r.URL.Path == path+"/status"
			},
			func(e auditEvent) bool { return e.ObjectRef.Subresource == "status" && e.Verb != "get" },
		},
		{
			"before the delete",
			func(r *http.Request, path string) bool {
				return r.Method == http.MethodDelete && r.URL.Path == path
			},
			func(e auditEvent) bool { return e.ObjectRef.Subresource == "" && e.Verb == "delete" },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScene(t)
			node := s.node("n")
			old := s.pod("web", node)
			path := "/api/v1/namespaces/" + s.ns + "/pods/web"

			var once sync.Once
			replaced := make(chan *v1.Pod, 1)
			user, rc := controllerUser(t, "controller")
			px := newProxy(t, rc, func(r *http.Request) {
				if tc.hooked(r, path) {
					once.Do(func() { replaced <- s.replace(old, tolerate(nil)) })
				}
			})
			c := startAs(t, "controller", identity{user: user}, px.config())
			s.taint(node)

			var fresh *v1.Pod
			select {
			case fresh = <-replaced:
			case <-time.After(failAfter):
				t.Fatalf("the controller sent no request %s within %s", tc.name, failAfter)
			}
			hooked := s.waitAudit(c.id, func(e auditEvent) bool {
				return e.ObjectRef.Resource == "pods" && e.ObjectRef.Name == "web" && tc.audited(e)
			})
			// The UID held: a delete with a UID precondition gets 409 Conflict; a status
			// patch that carries the old metadata.uid gets 422 Invalid (uid is immutable).
			assert.Contains(t, []int{http.StatusConflict, http.StatusUnprocessableEntity}, hooked.code(),
				"the server's answer to the stale %s", hooked.what())
			t.Logf("the server answered the stale %s with %d", hooked.what(), hooked.code())
			// The Deleter reads either answer as "the pod is gone", and says so; it is not a
			// failure to retry.
			c.waitOutput(t, s.ns+"/web (found gone by delete)", failAfter)
			c.stop(t, 30*time.Second)
			assert.NotContains(t, c.out.String(), "failed     "+s.ns+"/web", "a failure reported")

			now := s.getPod("web")
			assert.Equal(t, fresh.UID, now.UID)
			s.assertNotEvicted("web")
		})
	}
}

// replace deletes pod at once and creates a pod of the same name on the same node with the
// tolerations tols, and returns the new pod.
func (s *scene) replace(pod *v1.Pod, tols ...v1.Toleration) *v1.Pod {
	ctx := context.Background()
	pods := admin.CoreV1().Pods(pod.Namespace)
	err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil {
		s.t.Errorf("deleting %s: %v", pod.Name, err)
	}
	fresh, err := pods.Create(ctx, newPod(pod.Namespace, pod.Name, pod.Spec.NodeName, tols...), metav1.CreateOptions{})
	if err != nil {
		s.t.Errorf("re-creating %s: %v", pod.Name, err)
	}
	return fresh
}

// waitAudit polls the audit log until id made a request that keep accepts, in the scene's
// namespace, and returns the first.
func (s *scene) waitAudit(id identity, keep func(auditEvent) bool) auditEvent {
	s.t.Helper()
	inNS := inNamespace(s.ns)
	return waitAudit(s.t, id, 1, func(e auditEvent) bool { return inNS(e) && keep(e) })[0]
}

// waitAudit polls the audit log until id made n requests that keep accepts, and returns
// them.
func waitAudit(t *testing.T, id identity, n int, keep func(auditEvent) bool) []auditEvent {
	t.Helper()
	var found []auditEvent
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, failAfter, true, func(context.Context) (bool, error) {
		var err error
		found, err = auditEvents(id, keep)
		return len(found) >= n, err
	})
	if err != nil {
		t.Fatalf("%d such requests of %s in the audit log, want %d: %v", len(found), id.user, n, err)
	}
	return found
}
