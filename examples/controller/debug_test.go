package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/taintevict/taintevict/eviction/engine"
)

// The attempts of an open eviction are kept until it closes; /debug/pending reports them
// with the engine's Pending.
func TestDebugPending(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	tried := newAttempts(sideNode, func() time.Time { return now })
	web := engine.Ref{Namespace: "shop", Name: "web", UID: "u1", Holder: "node-1"}
	db := engine.Ref{Namespace: "shop", Name: "db", UID: "u2", Holder: "node-1"}
	gone := engine.Ref{Namespace: "shop", Name: "gone", UID: "u3", Holder: "node-1"}
	tried.Started(web, engine.Attempt{Call: 1})
	tried.Failed(web, engine.Attempt{Call: 1}, errors.New("etcdserver: request timed out"))
	tried.Started(web, engine.Attempt{Call: 2})
	tried.Failed(web, engine.Attempt{Call: 2}, errors.New("the server is currently unable to handle the request"))
	tried.Started(db, engine.Attempt{Call: 1})
	tried.Started(gone, engine.Attempt{Call: 1})
	tried.Succeeded(gone, engine.Attempt{Call: 1}, false)
	assert.Len(t, tried.open, 2, "closed evictions are forgotten")

	due := now.Add(time.Minute)
	side := pendingSide{name: sideNode, attempts: tried,
		pendingOf: func(key types.NamespacedName) (engine.Pending, bool) {
			for _, p := range []engine.Pending{{Target: web, At: due, Delayed: engine.ReasonRateLimited}, {Target: engine.Ref{Namespace: "x", Name: "y"}, At: due}} {
				if p.Target.Key() == key {
					return p, true
				}
			}
			return engine.Pending{}, false
		},
		budget: flagsOf(t, "-eviction-rate=2").budgets.Text}
	h := debugHandler([]pendingSide{side})
	ask := func(query string) (int, pendingAnswer) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pending"+query, nil))
		var a pendingAnswer
		if rec.Code == http.StatusOK {
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &a))
		}
		return rec.Code, a
	}

	code, a := ask("?pod=shop/web")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, a.Evictions, 1)
	e := a.Evictions[0]
	assert.Equal(t, sideNode, e.Controller)
	assert.Equal(t, "node-1", e.Holder)
	assert.Equal(t, due, *e.At)
	assert.Equal(t, engine.ReasonRateLimited, e.Delayed)
	assert.Equal(t, "the rate limit: -eviction-rate 2/s (burst 2)", e.Budget)
	assert.Equal(t, 2, e.Attempts)
	assert.Equal(t, "the server is currently unable to handle the request", e.LastError)

	code, a = ask("?pod=shop/db")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, a.Evictions, 1)
	assert.True(t, a.Evictions[0].Running, "not pending: its call runs")

	code, a = ask("?pod=shop/nothing")
	require.Equal(t, http.StatusOK, code)
	assert.Empty(t, a.Evictions)
	assert.Equal(t, "shop/nothing", a.Pod)

	for _, q := range []string{"", "?pod=web", "?pod=/web", "?pod=shop/", "?pod=a/b/c"} {
		code, _ := ask(q)
		assert.Equal(t, http.StatusBadRequest, code, "query %q", q)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/debug/pending?pod=shop/web", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

// /debug/pending is served on the metrics port behind the same reviews as /metrics, to a
// bearer token in the Authorization header or, through the API server's service proxy,
// in X-Taintevict-Authorization.
func TestServeDebugPending(t *testing.T) {
	_, reviewClient := reviewsServer(t)
	addr := freeAddr(t)
	added := metav1.NewTime(time.Now())
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: Unreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &added}}}}
	web := podOn("shop", "web", "node-1")
	hour := int64(3600)
	web.Spec.Tolerations = []v1.Toleration{{Key: Unreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &hour}}
	client := fake.NewClientset(node, web)
	allow(client)
	out := serveUntilDone(t, client, reviewClient, "-kubeconfig=x", "-metrics-addr="+addr)
	out.waitFor(t, "scheduled  shop/web on node-1")
	url := "https://" + addr + "/debug/pending?pod=shop/web"

	resp, body := get(t, url, nosyToken)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	resp, body = get(t, url, "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)

	resp, body = get(t, url, askToken)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var a pendingAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &a))
	require.Len(t, a.Evictions, 1, body)
	assert.Equal(t, "node-1", a.Evictions[0].Holder)
	assert.WithinDuration(t, added.Add(time.Hour), *a.Evictions[0].At, time.Second)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set(tokenHeader, "Bearer "+askToken)
	resp2, err := scraper.Do(req)
	require.NoError(t, err)
	resp2.Body.Close()
	assert.Equal(t, http.StatusOK, resp2.StatusCode, "the token through the service proxy's header")
}
