package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// explainJSON runs explain with -o json and decodes its answer.
func explainJSON(t *testing.T, objs []runtime.Object, args ...string) Explanation {
	t.Helper()
	code, out, errOut := runWith(t, objs, append(append([]string{"explain"}, args...), "-o", "json", "--controller=none")...)
	require.Equal(t, exitOK, code, errOut)
	var x Explanation
	require.NoError(t, json.Unmarshal([]byte(out), &x), out)
	return x
}

func TestExplain(t *testing.T) {
	ago := start.Add(-100 * time.Second)
	objs := smallCluster()
	objs[0] = testNode("a-1", "a", noExecute(down, ago))
	terminating := testPod("web", "leaving", "a-1")
	terminating.DeletionTimestamp = &metav1.Time{Time: ago}
	finished := testPod("web", "done", "a-1")
	finished.Status.Phase = v1.PodSucceeded
	objs = append(objs, terminating, finished, testPod("web", "pending", ""))
	tests := []struct {
		name, ns, pod string
		verdict       string
		seconds       float64
		text          []string
	}{
		{"a pod that tolerates for 300 s", "db", "db-a-1", "Evicted", 200, []string{
			"Pod db/db-a-1 runs on node a-1 (zone a).",
			"Its node carries 1 NoExecute taint: example.com/down:NoExecute, tolerated for 300s by spec.tolerations[0] (example.com/down Exists NoExecute), counted from its TimeAdded 2030-01-01T11:58:20Z: due at 2030-01-01T12:03:20Z (in 3m20s).",
			"So the controller evicts it at 2030-01-01T12:03:20Z, in 3m20s."}},
		{"a pod that does not tolerate it", "web", "web-a-1", "Evicted", 0, []string{
			"example.com/down:NoExecute, which no toleration tolerates: due at once.", "So the controller evicts it now"}},
		{"a pod that tolerates it forever", "kube-system", "agent-a-1", "Stays", 0, []string{
			"tolerated forever by spec.tolerations[0]", "So the controller never evicts it"}},
		{"a pod on an untainted node", "web", "web-b-1", "Stays", 0, []string{"Its node carries no NoExecute taint.", "never evicts it"}},
		{"a terminating pod", "web", "leaving", "Leaving", 0, []string{"It is already being deleted (since 2030-01-01T11:58:20Z): the controller never evicts a pod that is leaving, so nothing will happen."}},
		{"a finished pod", "web", "done", "Leaving", 0, []string{"It has finished (Succeeded)", "nothing will happen"}},
		{"a pod not scheduled", "web", "pending", "Stays", 0, []string{"is not scheduled to a node: no node taint applies to it."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := explainJSON(t, objs, "pod/"+tc.pod, "-n", tc.ns)
			assert.Equal(t, tc.verdict, x.Verdict.Verdict)
			if tc.verdict == "Evicted" {
				require.NotNil(t, x.Verdict.Seconds)
				assert.Equal(t, tc.seconds, *x.Verdict.Seconds)
			}
			for _, s := range tc.text {
				assert.Contains(t, x.Text, s)
			}
		})
	}
}

func TestExplainDevices(t *testing.T) {
	objs := deviceCluster()
	objs = append(objs, rule("down", down))
	x := explainJSON(t, objs, "pod/train-0", "-n", "ml")
	assert.Equal(t, "Evicted", x.Verdict.Verdict)
	require.Len(t, x.DeviceTaints, 1)
	assert.Equal(t, driver+"/pool-a/gpu-0", x.DeviceTaints[0].Device)
	assert.Contains(t, x.Text, "The devices of its ResourceClaims carry NoExecute taints: example.com/down:NoExecute on device gpu.example.com/pool-a/gpu-0, tolerated for 60s by toleration 0 of its claim's allocation")
}

func TestExplainBadInput(t *testing.T) {
	forbidden := fake.NewClientset(smallCluster()...)
	forbidden.PrependReactor("get", "pods", forbid("pods", "get"))
	for _, tc := range []struct {
		name   string
		client *fake.Clientset
		args   []string
		code   int
		stderr string
	}{
		{"an unknown pod", nil, []string{"explain", "pod/nope", "-n", "web"}, exitCluster, "pod web/nope not found"},
		{"no pod", nil, []string{"explain"}, exitUsage, "explain takes one pod"},
		{"a node", nil, []string{"explain", "node/a-1"}, exitUsage, "explain explains pods"},
		{"no access", forbidden, []string{"explain", "pod/web-a-1", "-n", "web"}, exitCluster, "forbidden: the command needs RBAC to allow get pods in namespace web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := tc.client
			if client == nil {
				client = fake.NewClientset(smallCluster()...)
			}
			code, _, errOut := runOn(t, client, nil, tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, errOut, tc.stderr)
		})
	}
}

// explain asks the controller at --controller with the kubeconfig's bearer token, and says
// what it holds; when it cannot, it says why.
func TestExplainAsksController(t *testing.T) {
	due := start.Add(5 * time.Minute)
	var gotAuth, gotPod string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotPod = r.Header.Get("Authorization"), r.URL.Query().Get("pod")
		if r.URL.Path != "/debug/pending" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(pendingAnswer{Pod: gotPod, Evictions: []PendingEviction{
			{Controller: "node", Holder: "a-1", At: &due, Attempts: 2, LastError: "etcdserver: request timed out"}}})
	}))
	defer srv.Close()
	client := fake.NewClientset(smallCluster()...)
	rc := &rest.Config{Host: "https://api.example", BearerToken: "secret-token"}

	code, out, errOut := runOn(t, client, rc, "explain", "pod/db-a-1", "-n", "db", "--controller", srv.URL, "--controller-insecure")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "Bearer secret-token", gotAuth)
	assert.Equal(t, "db/db-a-1", gotPod)
	assert.Contains(t, out, "The controller (node side) holds an eviction of this pod because of a-1")
	assert.Contains(t, out, "2 attempts so far, the last failed: etcdserver: request timed out.")

	// Its certificate is not trusted without --controller-insecure: it says so.
	code, out, _ = runOn(t, client, rc, "explain", "pod/db-a-1", "-n", "db", "--controller", srv.URL)
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "The controller could not be asked (via "+srv.URL+"):")
	assert.Contains(t, out, "certificate")

	// No kubeconfig credentials, no question.
	code, out, _ = runOn(t, client, &rest.Config{Host: "https://api.example"}, "explain", "pod/db-a-1", "-n", "db", "--controller", srv.URL, "--controller-insecure")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "the kubeconfig has no bearer token")
}

// TestExplainTaintWithoutTimeAdded: a taint without TimeAdded, as kubectl taint writes it,
// counts from when the controller first saw it. Explain cannot see that, and says so: it
// gives the latest the deadline can be (the controller saw it now at the latest). When
// the controller answers, its own deadline is the verdict.
func TestExplainTaintWithoutTimeAdded(t *testing.T) {
	objs := smallCluster()
	objs[0] = testNode("a-1", "a", v1.Taint{Key: down, Effect: v1.TaintEffectNoExecute})

	x := explainJSON(t, objs, "pod/db-a-1", "-n", "db")
	assert.NotContains(t, x.Text, "TimeAdded 2030", "no TimeAdded to count from")
	assert.Contains(t, x.Text, "counted from when the controller first saw it (it has no TimeAdded, as kubectl taint writes it), which explain cannot know: due by 2030-01-01T12:05:00Z at the latest (in 5m0s), unless the controller restarts first (it then counts from its restart).")
	assert.Contains(t, x.Text, "So the controller evicts it by 2030-01-01T12:05:00Z at the latest, in 5m0s.")
	assert.True(t, x.Verdict.AtTheLatest, "the verdict's time is a bound")
	require.Len(t, x.NodeTaints, 1)
	assert.True(t, x.NodeTaints[0].FirstSight)

	// The controller first saw the taint 3 minutes ago: its deadline is in 2 minutes.
	due := start.Add(2 * time.Minute)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(pendingAnswer{Pod: "db/db-a-1", Evictions: []PendingEviction{{Controller: "node", Holder: "a-1", At: &due}}})
	}))
	defer srv.Close()
	rc := &rest.Config{Host: "https://api.example", BearerToken: "secret-token"}
	code, out, errOut := runOn(t, fake.NewClientset(objs...), rc, "explain", "pod/db-a-1", "-n", "db", "--controller", srv.URL, "--controller-insecure", "-o", "json")
	require.Equal(t, exitOK, code, errOut)
	x = Explanation{}
	require.NoError(t, json.Unmarshal([]byte(out), &x), out)
	assert.Contains(t, x.Text, "counted from when the controller first saw it (it has no TimeAdded, as kubectl taint writes it), at 2030-01-01T11:57:00Z as its deadline says: due at 2030-01-01T12:02:00Z (in 2m0s)")
	assert.Contains(t, x.Text, "So the controller evicts it at 2030-01-01T12:02:00Z, in 2m0s.")
	require.NotNil(t, x.Verdict.At)
	assert.True(t, x.Verdict.At.Equal(due), "the controller's deadline: got %s, want %s", x.Verdict.At, due)
	assert.False(t, x.Verdict.AtTheLatest)
}
