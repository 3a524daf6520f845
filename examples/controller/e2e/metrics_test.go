package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// The suite's scraper: a service account bound to the rules of deploy/metrics.yaml's
// ClusterRole (under a name of the suite's, so that the manifests' dry-run creates do not
// find it existing), as a Prometheus would be.
const (
	scraperNamespace = "e2e-metrics"
	scraperAccount   = "prometheus"
	scraperRole      = "e2e-metrics-scraper"
	readerRole       = "taintevict-metrics-reader" // deploy/metrics.yaml's
)

var (
	scraperOnce  sync.Once
	scraperTok   string
	scraperSetup error
)

// scraperToken returns a token of the suite's scraper, whom RBAC allows to get /metrics.
// The account, its role and binding are made once per test binary.
func scraperToken(t *testing.T) string {
	t.Helper()
	scraperOnce.Do(func() {
		rules, err := readerRules(t)
		if err == nil {
			scraperTok, err = setUpScraper(rules)
		}
		scraperSetup = err
	})
	if scraperSetup != nil {
		t.Fatalf("setting up the suite's scraper of /metrics: %v", scraperSetup)
	}
	return scraperTok
}

// readerRules are the rules of deploy/metrics.yaml's ClusterRole, as applied.
func readerRules(t *testing.T) ([]rbacv1.PolicyRule, error) {
	for _, obj := range manifests(t) {
		if obj.GetKind() != "ClusterRole" || obj.GetName() != readerRole {
			continue
		}
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role); err != nil {
			return nil, fmt.Errorf("ClusterRole %s: %w", readerRole, err)
		}
		return role.Rules, nil
	}
	return nil, fmt.Errorf("deploy/ has no ClusterRole %s", readerRole)
}

func setUpScraper(rules []rbacv1.PolicyRule) (string, error) {
	return setUpAccount(scraperNamespace, scraperAccount, scraperRole, rules)
}

// setUpAccount makes the namespace ns, its service account, a ClusterRole role of rules
// bound to it (each left as it is if it exists), and returns a token of the account. The
// objects are shared by the tests after the first that calls it.
func setUpAccount(ns, account, role string, rules []rbacv1.PolicyRule) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), failAfter)
	defer cancel()
	exists := func(err error) error {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	_, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err = exists(err); err != nil {
		return "", err
	}
	_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{})
	if err = exists(err); err != nil {
		return "", err
	}
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules}, metav1.CreateOptions{})
	if err = exists(err); err != nil {
		return "", err
	}
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: ns}},
	}, metav1.CreateOptions{})
	if err = exists(err); err != nil {
		return "", err
	}
	return accountToken(ctx, ns, account)
}

// accountToken returns a token of the service account ns/name, from the TokenRequest API.
func accountToken(ctx context.Context, ns, name string) (string, error) {
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](7200)}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token of %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, nil
}

// reviewsBy counts the TokenReviews and SubjectAccessReviews that id made, from the audit
// log.
func reviewsBy(t *testing.T, id identity) (tokenReviews, accessReviews int) {
	t.Helper()
	events, err := auditEvents(id, func(e auditEvent) bool {
		return e.Verb == "create" && e.ObjectRef != nil &&
			(e.ObjectRef.Resource == "tokenreviews" || e.ObjectRef.Resource == "subjectaccessreviews")
	})
	require.NoError(t, err, "reading the audit log")
	for _, e := range events {
		if e.ObjectRef.Resource == "tokenreviews" {
			tokenReviews++
		} else {
			accessReviews++
		}
	}
	return tokenReviews, accessReviews
}

// The metrics port served as kube-controller-manager serves its own: HTTPS; /healthz and
// /readyz open; /metrics only to a bearer token that the API server accepts (TokenReview,
// else 401), of an account that RBAC allows to get /metrics (SubjectAccessReview, else
// 403), here the rules of deploy/metrics.yaml; kube's metric names in it; the reviews
// cached, so that scrapes in a row cost no API call.
func TestMetricsSecure(t *testing.T) {
	s := newScene(t)
	node := s.node("n")
	s.pod("web", node)
	c := startController(t, "controller")
	require.Equal(t, "https", c.scheme)
	_, err := admin.CoreV1().ServiceAccounts(s.ns).Create(t.Context(), &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nosy"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	nosy, err := accountToken(t.Context(), s.ns, "nosy")
	require.NoError(t, err)

	tests := []struct {
		name, path, token string
		want              int
		body              string
	}{
		{"healthz without a token", "/healthz", "", http.StatusOK, "ok"},
		{"readyz without a token", "/readyz", "", http.StatusOK, "ok"},
		{"metrics without a token", "/metrics", "", http.StatusUnauthorized, "Unauthorized"},
		{"metrics with a token the API server refuses", "/metrics", "not-a-token", http.StatusUnauthorized, "Unauthorized"},
		{"metrics of an account without the right", "/metrics", nosy, http.StatusForbidden,
			fmt.Sprintf(`Forbidden: user "system:serviceaccount:%s:nosy" cannot get path "/metrics"`, s.ns)},
		{"metrics of the scraper", "/metrics", scraperToken(t), http.StatusOK, "# TYPE taint_eviction_controller_pod_deletions_total counter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := c.scrape(t, tc.path, tc.token)
			assert.Equal(t, tc.want, code, "got status %d, want %d; body %q", code, tc.want, body)
			assert.Contains(t, body, tc.body)
		})
	}

	// kube's two metrics count the eviction.
	s.taint(node)
	s.waitDeleted("web")
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, failAfter, true, func(context.Context) (bool, error) {
		return c.metric(t, "taint_eviction_controller_pod_deletions_total") == 1, nil
	})
	require.NoError(t, err, "taint_eviction_controller_pod_deletions_total: got %v, want 1", c.metric(t, "taint_eviction_controller_pod_deletions_total"))
	assert.Equal(t, 1.0, c.metric(t, "taint_eviction_controller_pod_deletion_duration_seconds_count"))
	// kube-controller-manager's HELP lines, as it serves them, [ALPHA] included.
	_, body := c.scrape(t, "/metrics", scraperToken(t))
	assert.Contains(t, body, "# HELP taint_eviction_controller_pod_deletions_total [ALPHA] Total number of Pods deleted by TaintEvictionController since its start.\n")
	assert.Contains(t, body, "# HELP taint_eviction_controller_pod_deletion_duration_seconds [ALPHA] Latency, in seconds, between the time when a taint effect has been activated for the Pod and its deletion via TaintEvictionController.\n")

	// Ten scrapes in a row cost one TokenReview and one SubjectAccessReview at most (the
	// 10 s caches may run out once during the burst), not two calls each.
	tokens0, access0 := reviewsBy(t, c.id)
	start := time.Now()
	for range 10 {
		c.metric(t, "taint_eviction_controller_pod_deletions_total")
	}
	took := time.Since(start)
	tokens, access := reviewsBy(t, c.id)
	bound := 1 + int(took/(10*time.Second))
	assert.LessOrEqual(t, tokens-tokens0, bound, "TokenReviews for 10 scrapes in %s", took)
	assert.LessOrEqual(t, access-access0, bound, "SubjectAccessReviews for 10 scrapes in %s", took)
	// Before the burst: one review per token the controller saw (the refused one, the nosy
	// account's, the scraper's), one access review per authenticated user, at least.
	assert.GreaterOrEqual(t, tokens0, 3, "TokenReviews before the burst")
	assert.GreaterOrEqual(t, access0, 2, "SubjectAccessReviews before the burst")
	t.Logf("reviews: %d TokenReviews and %d SubjectAccessReviews before 10 scrapes, %d and %d during them (%s)",
		tokens0, access0, tokens-tokens0, access-access0, took.Round(time.Millisecond))

	// Plain HTTP on the port gets Go's answer to HTTP on an HTTPS port, and no metrics.
	plain := &process{name: c.name, addr: c.addr, scheme: "http"}
	code, body := plain.scrape(t, "/metrics", "")
	assert.Equal(t, http.StatusBadRequest, code, "plain HTTP: got %d %q", code, body)
}

// The device side's metrics, through the same secure port: with -controllers=device, kube's
// device_taint_eviction_controller_* metrics count the eviction, taintevict's count it with
// controller="device", behind the same TokenReview and SubjectAccessReview (401 without a
// token), and the node side's are not there; with -controllers=node,device, both sides'
// are on the one port.
func TestDeviceMetricsSecure(t *testing.T) {
	for name, controllers := range map[string]string{"device": "device", "both": "node,device"} {
		t.Run(name, func(t *testing.T) {
			s := newDeviceScene(t, "gpu-0")
			s.podOnDevices("web", alloc{device: "gpu-0"})
			c := startController(t, "controller", "-controllers="+controllers)
			require.Equal(t, "https", c.scheme)
			code, body := c.scrape(t, "/metrics", "")
			assert.Equal(t, http.StatusUnauthorized, code, "/metrics without a token: %q", body)

			s.taintDevice("gpu-0", "ecc")
			s.waitDeleted("web")
			const deletions = "device_taint_eviction_controller_pod_deletions_total"
			err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, failAfter, true, func(context.Context) (bool, error) {
				return c.metric(t, deletions) == 1, nil
			})
			require.NoError(t, err, "%s: got %v, want 1", deletions, c.metric(t, deletions))
			assert.Equal(t, 1.0, c.metric(t, "device_taint_eviction_controller_pod_deletion_duration_seconds_count"))
			assert.Equal(t, 1.0, c.metric(t, outcomesOf("device", "succeeded", "delete")))
			assert.Equal(t, 1.0, c.metric(t, `taintevict_eviction_lateness_seconds_count{controller="device"}`))

			code, body = c.scrape(t, "/metrics", scraperToken(t))
			require.Equal(t, http.StatusOK, code)
			// kube-controller-manager's HELP lines, as it serves them, [ALPHA] included.
			assert.Contains(t, body, "# HELP "+deletions+" [ALPHA] Total number of Pods deleted by DeviceTaintEvictionController since its start.\n")
			assert.Contains(t, body, "# HELP device_taint_eviction_controller_pod_deletion_duration_seconds [ALPHA] Latency, in seconds, between the time when a device taint effect has been activated and a Pod's deletion via DeviceTaintEvictionController.\n")
			assert.Contains(t, body, `device_taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="240"} 1`)
			node := "# TYPE taint_eviction_controller_pod_deletions_total counter"
			if controllers == "device" {
				assert.NotContains(t, body, node, "the node side's metrics, with -controllers=device")
				assert.NotContains(t, body, `controller="node"`)
			} else {
				assert.Contains(t, body, node)
				assert.Contains(t, body, `taintevict_pending_evictions{controller="node"} 0`)
			}
		})
	}
}
