package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// classified is one response of the API server, as the proxy saw it: the request and the
// API Priority and Fairness classification the server gives in its headers.
type classified struct {
	request       string // "METHOD path?query"
	priorityLevel types.UID
	flowSchema    types.UID
}

// classification returns the priority level and FlowSchema a response was served at.
func classification(h http.Header) (pl, fs types.UID) {
	return types.UID(h.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)),
		types.UID(h.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID))
}

// priorityLevelOf makes a request with rc and returns the priority level it was served at.
func priorityLevelOf(t *testing.T, rc *rest.Config, path string) types.UID {
	t.Helper()
	hc, err := rest.HTTPClientFor(rc)
	require.NoError(t, err)
	resp, err := hc.Get(strings.TrimSuffix(rc.Host, "/") + path)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s%s", rc.Host, path)
	pl, _ := classification(resp.Header)
	return pl
}

// TestFlowSchema (issue 22): API Priority and Fairness is on in the suite's API server, and
// the FlowSchema of deploy/ has it serve every request of the controller, run as the
// service account of deploy/, at the priority level workload-high, where the bootstrap
// FlowSchema service-accounts puts it at workload-low. The proof is the header
// X-Kubernetes-PF-PriorityLevel-UID of each of the controller's responses: a proxy between
// the controller and the server reads it, for the informers' lists and watches, the
// Lease, the status patch, the delete and the Event.
func TestFlowSchema(t *testing.T) {
	ctx := t.Context()
	levels := map[string]types.UID{}
	for _, name := range []string{"exempt", "workload-high", "workload-low"} {
		pl, err := admin.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "the bootstrap priority level %s: is API Priority and Fairness on?", name)
		levels[name] = pl.UID
	}
	// APF is on: it classifies the admin's requests (system:masters) as exempt.
	require.Equal(t, levels["exempt"], priorityLevelOf(t, adminConfig, "/api/v1/namespaces?limit=1"),
		"the admin's request is not served at the priority level exempt: API Priority and Fairness is off")

	d := applyRBAC(t)
	tr, err := admin.CoreV1().ServiceAccounts(d.namespace).CreateToken(ctx, d.serviceAccount,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err, "requesting a token")
	saConfig := &rest.Config{Host: adminConfig.Host, TLSClientConfig: rest.TLSClientConfig{CAData: adminConfig.CAData}, BearerToken: tr.Status.Token}
	const probe = "/api/v1/pods?limit=1"
	require.Equal(t, levels["workload-low"], priorityLevelOf(t, saConfig, probe),
		"without the FlowSchema, the service account's request is served at workload-low")

	// The FlowSchema, from its file; the server's APF controller takes it up within moments.
	var schema types.UID
	a := newApplier(t)
	for _, obj := range manifests(t) {
		if obj.GetKind() != "FlowSchema" {
			continue
		}
		require.NoError(t, a.create(ctx, obj, false), "creating %s", describe(obj))
		name := obj.GetName()
		t.Cleanup(func() {
			err := admin.FlowcontrolV1().FlowSchemas().Delete(context.Background(), name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting FlowSchema %s: %v", name, err)
			}
		})
		fs, err := admin.FlowcontrolV1().FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		schema = fs.UID
	}
	require.NotEmpty(t, schema, "deploy/ has no FlowSchema")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, failAfter, true, func(context.Context) (bool, error) {
		return priorityLevelOf(t, saConfig, probe) == levels["workload-high"], nil
	})
	require.NoError(t, err, "the service account's requests never served at workload-high")

	// The controller, as the service account, behind a proxy that reads each response.
	var mu sync.Mutex
	var seen []classified
	px := newProxyAfter(t, saConfig, nil, func(r *http.Response) {
		pl, fs := classification(r.Header)
		req := r.Request.Method + " " + r.Request.URL.Path
		if r.Request.URL.RawQuery != "" {
			req += "?" + r.Request.URL.RawQuery
		}
		mu.Lock()
		seen = append(seen, classified{request: req, priorityLevel: pl, flowSchema: fs})
		mu.Unlock()
	})
	id := identity{user: "system:serviceaccount:" + d.namespace + ":" + d.serviceAccount, credential: "JTI=" + tokenID(t, tr.Status.Token)}
	s := newScene(t)
	node := s.node("n")
	s.pod("web", node)
	c := startAs(t, "controller", id, px.config(), leaderArgs(d.namespace)...)
	waitAudit(t, c.id, 1, holdsLease(d.namespace))
	s.taint(node)
	pod, _ := s.waitDeleted("web")
	s.assertEvicted(pod) // its Event is written too
	c.stop(t, 30*time.Second)

	mu.Lock()
	defer mu.Unlock()
	var wrong []string
	for _, c := range seen {
		if c.priorityLevel != levels["workload-high"] || c.flowSchema != schema {
			wrong = append(wrong, c.request+" at priority level "+string(c.priorityLevel)+", FlowSchema "+string(c.flowSchema))
		}
	}
	assert.Empty(t, wrong, "requests of the controller not served at workload-high (%s) by the FlowSchema (%s)", levels["workload-high"], schema)
	for _, want := range []string{
		"GET /api/v1/pods?", "GET /api/v1/nodes?", // the informers' lists and watches
		"PUT /apis/coordination.k8s.io/v1/namespaces/" + d.namespace + "/leases/",
		"PATCH /api/v1/namespaces/" + s.ns + "/pods/web/status",
		"DELETE /api/v1/namespaces/" + s.ns + "/pods/web",
		"POST /api/v1/namespaces/" + s.ns + "/events",
	} {
		assert.True(t, slices.ContainsFunc(seen, func(c classified) bool { return strings.HasPrefix(c.request, want) }),
			"no request %s… among the controller's %d", want, len(seen))
	}
	assert.True(t, slices.ContainsFunc(seen, func(c classified) bool {
		return strings.HasPrefix(c.request, "GET /api/v1/pods?") && strings.Contains(c.request, "watch=true")
	}), "no watch of pods among the controller's requests")
}
