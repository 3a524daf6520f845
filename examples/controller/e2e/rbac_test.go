package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// deployed is what TestLeastPrivilege applied from deploy/: the controller's service
// account and its ClusterRoles.
type deployed struct {
	namespace, serviceAccount string
	clusterRoles              []string
}

// applyRBAC creates the Namespace, ServiceAccount, Roles and bindings of deploy/ from the
// manifest files themselves (not the Deployment: no kubelet would run it).
func applyRBAC(t *testing.T) deployed {
	t.Helper()
	a := newApplier(t)
	var d deployed
	var objs []*unstructured.Unstructured
	for _, obj := range manifests(t) {
		switch obj.GetKind() {
		case "Namespace":
			objs = append([]*unstructured.Unstructured{obj}, objs...)
		case "ServiceAccount":
			d.namespace, d.serviceAccount = obj.GetNamespace(), obj.GetName()
			objs = append(objs, obj)
		case "ClusterRole":
			d.clusterRoles = append(d.clusterRoles, obj.GetName())
			objs = append(objs, obj)
		case "ClusterRoleBinding", "Role", "RoleBinding":
			objs = append(objs, obj)
		}
	}
	for _, obj := range objs {
		if err := a.create(t.Context(), obj, false); err != nil {
			t.Fatalf("creating %s: %v", describe(obj), err)
		}
	}
	if d.serviceAccount == "" || len(d.clusterRoles) == 0 {
		t.Fatalf("deploy/ has no ServiceAccount or no ClusterRole")
	}
	return d
}

// serviceAccountStarter returns a starter that runs each controller with a token of the
// service account from the TokenRequest API, and leader election in its namespace, the only
// one where its Role lets it write Leases.
func serviceAccountStarter(d deployed) starter {
	return func(t *testing.T, name string, args ...string) *process {
		t.Helper()
		tr, err := admin.CoreV1().ServiceAccounts(d.namespace).CreateToken(t.Context(), d.serviceAccount,
			&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
		require.NoError(t, err, "requesting a token")
		rc := &rest.Config{
			Host:            adminConfig.Host,
			TLSClientConfig: rest.TLSClientConfig{CAData: adminConfig.CAData},
			BearerToken:     tr.Status.Token,
		}
		id := identity{user: "system:serviceaccount:" + d.namespace + ":" + d.serviceAccount, credential: "JTI=" + tokenID(t, tr.Status.Token)}
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-leader-elect") }) {
			return startAs(t, name, id, rc, args...)
		}
		// A single replica: it elects itself, and the scenario starts once it leads.
		p := startAs(t, name, id, rc, append(leaderArgs(d.namespace), args...)...)
		waitAudit(t, p.id, 1, holdsLease(d.namespace))
		return p
	}
}

// tokenID returns the jti claim of a service account token, which the API server records as
// the credential ID of each request made with it.
func tokenID(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3, "a JWT")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var claims struct {
		ID string `json:"jti"`
	}
	require.NoError(t, json.Unmarshal(payload, &claims))
	require.NotEmpty(t, claims.ID, "jti claim")
	return claims.ID
}

// Scenario 9: the RBAC of deploy/, applied from its files, is all the controller needs:
// scenarios 1, 3 and 8 pass when it runs as that service account, and so do the device
// side's scenarios with -controllers=node,device. Without pods/delete, its
// deletes fail with Forbidden; the Manager retries them, and the pod is evicted once the
// right is given back.
func TestLeastPrivilege(t *testing.T) {
	d := applyRBAC(t)
	start := serviceAccountStarter(d)
	t.Run("evict untolerated", func(t *testing.T) { evictUntolerated(t, start) })
	t.Run("untaint cancels", func(t *testing.T) { untaintCancels(t, start) })
	t.Run("leader failover", func(t *testing.T) { failover(t, start, d.namespace) })
	t.Run("forbidden delete is retried", func(t *testing.T) { forbiddenDelete(t, d, start) })
	// The device side, with the node side under the one Lease: deploy/ and deploy/device/
	// together are all both need (its rules' status included).
	both := []string{"-controllers=node,device"}
	t.Run("device evict untolerated", func(t *testing.T) { deviceEvictUntolerated(t, start, both...) })
	t.Run("device rules", func(t *testing.T) { deviceRules(t, start, both...) })
}

func forbiddenDelete(t *testing.T, d deployed, start starter) {
	s := newScene(t)
	node := s.node("n")
	s.pod("web", node)
	// The right goes after the start: the controller checks its rights when it starts, and
	// refuses to run without them.
	c := start(t, "controller")
	restore := withoutPodDelete(t, d)
	s.taint(node)

	// Three refused deletes: the Manager retries.
	waitAudit(t, c.id, 3, func(e auditEvent) bool {
		return writesPod(s.ns, "web")(e) && e.Verb == "delete" && e.code() == http.StatusForbidden
	})
	s.assertNotDeleted("web")
	c.waitOutput(t, "forbidden", failAfter)
	assert.GreaterOrEqual(t, c.metric(t, outcomes("failed", "Forbidden")), 1.0, "Forbidden failures the Observer counted")

	restore()
	pod, _ := s.waitDeleted("web")
	s.assertEvicted(pod)
}

// withoutPodDelete removes the delete verb on pods from the deployed ClusterRoles, and
// returns the function that puts it back (also run at the end of the test).
func withoutPodDelete(t *testing.T, d deployed) func() {
	t.Helper()
	roles := admin.RbacV1().ClusterRoles()
	var saved []*rbacv1.ClusterRole
	removed := false
	for _, name := range d.clusterRoles {
		role, err := roles.Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		saved = append(saved, role.DeepCopy())
		var rules []rbacv1.PolicyRule
		for _, r := range role.Rules {
			if slices.Contains(r.Resources, "pods") && slices.Contains(r.Verbs, "delete") {
				r.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "delete" })
				removed = true
			}
			if len(r.Verbs) > 0 {
				rules = append(rules, r)
			}
		}
		role.Rules = rules
		_, err = roles.Update(t.Context(), role, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	require.True(t, removed, "no ClusterRole of deploy/ grants delete on pods")
	done := false
	restore := func() {
		if done {
			return
		}
		done = true
		for _, role := range saved {
			ctx := context.Background() // also after the test's context is cancelled
			cur, err := roles.Get(ctx, role.Name, metav1.GetOptions{})
			if err == nil {
				cur.Rules = role.Rules
				_, err = roles.Update(ctx, cur, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Errorf("restoring ClusterRole %s: %v", role.Name, err)
			}
		}
	}
	t.Cleanup(restore)
	return restore
}
