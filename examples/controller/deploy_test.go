package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/examples/controller/deploy"
)

// manifests decodes deploy/ and returns its objects by kind.
func manifests(t *testing.T) map[string][]any {
	t.Helper()
	objs, err := deploy.Objects()
	require.NoError(t, err)
	byKind := map[string][]any{}
	for _, o := range objs {
		kind := fmt.Sprintf("%T", o)
		byKind[kind] = append(byKind[kind], o)
	}
	return byKind
}

// TestDeployManifests decodes every file of deploy/ and checks the Deployment: two
// replicas, probes on the controller's endpoints, requests, a non-root read-only security
// context, and arguments the command accepts.
func TestDeployManifests(t *testing.T) {
	objs := manifests(t)
	for kind, n := range map[string]int{
		"*v1.Namespace": 1, "*v1.ServiceAccount": 1, "*v1.ClusterRole": 4, "*v1.ClusterRoleBinding": 3,
		"*v1.Role": 2, "*v1.RoleBinding": 1, "*v1.Deployment": 1, "*v1.Service": 1,
	} {
		assert.Len(t, objs[kind], n, kind)
	}
	ns := objs["*v1.Namespace"][0].(*v1.Namespace).Name
	sa := objs["*v1.ServiceAccount"][0].(*v1.ServiceAccount)
	assert.Equal(t, ns, sa.Namespace)

	d := objs["*v1.Deployment"][0].(*appsv1.Deployment)
	assert.Equal(t, ns, d.Namespace)
	require.NotNil(t, d.Spec.Replicas)
	assert.Equal(t, int32(2), *d.Spec.Replicas)
	pod := d.Spec.Template.Spec
	assert.Equal(t, sa.Name, pod.ServiceAccountName)
	require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
	assert.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	for _, probe := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		assert.Equal(t, v1.URISchemeHTTPS, probe.HTTPGet.Scheme, "the probes of %s: the port serves HTTPS", probe.HTTPGet.Path)
		assert.Equal(t, c.Ports[0].Name, probe.HTTPGet.Port.String())
	}
	assert.False(t, c.Resources.Requests.Cpu().IsZero())
	assert.False(t, c.Resources.Requests.Memory().IsZero())
	require.NotNil(t, c.SecurityContext)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	assert.Equal(t, []v1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	assert.Greater(t, *pod.TerminationGracePeriodSeconds, int64(30), "longer than the Manager's delete timeout")

	// The container's arguments, in a pod of that namespace, are valid and mean what the
	// Deployment wants: leader election in its own namespace, metrics on its port.
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	t.Setenv("POD_NAMESPACE", ns)
	cfg, err := parseFlags(c.Args, &strings.Builder{})
	require.NoError(t, err)
	assert.True(t, cfg.leaderElect)
	assert.Equal(t, ns, cfg.leNamespace)
	assert.Equal(t, fmt.Sprintf(":%d", c.Ports[0].ContainerPort), cfg.metricsAddr)
	assert.True(t, cfg.serving.secure, "metrics over HTTPS, behind TokenReview and SubjectAccessReview")

	// The Service reaches that port on the Deployment's pods.
	svc := objs["*v1.Service"][0].(*v1.Service)
	assert.Equal(t, ns, svc.Namespace)
	assert.Equal(t, d.Spec.Selector.MatchLabels, svc.Spec.Selector)
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, c.Ports[0].Name, svc.Spec.Ports[0].TargetPort.String())
}

// authDelegator is kube's bootstrap ClusterRole system:auth-delegator (the RBAC bootstrap
// policy of kube-apiserver), which deploy/ binds rather than defines.
var authDelegator = &rbacv1.ClusterRole{
	ObjectMeta: metav1.ObjectMeta{Name: "system:auth-delegator"},
	Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	},
}

// TestDeployMetricsReader checks the ClusterRole that a scraper of /metrics needs: get on
// the non-resource URL /metrics, and nothing else; deploy/ does not bind it.
func TestDeployMetricsReader(t *testing.T) {
	objs := manifests(t)
	var reader *rbacv1.ClusterRole
	for _, o := range objs["*v1.ClusterRole"] {
		if r := o.(*rbacv1.ClusterRole); r.Name == "taintevict-metrics-reader" {
			reader = r
		}
	}
	require.NotNil(t, reader, "the ClusterRole taintevict-metrics-reader")
	assert.Equal(t, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, reader.Rules)
	for _, b := range objs["*v1.ClusterRoleBinding"] {
		assert.NotEqual(t, reader.Name, b.(*rbacv1.ClusterRoleBinding).RoleRef.Name, "the reader's binding is the user's, to their Prometheus")
	}
}

// allows reports whether rules allow p (with the Lease's name for a namespaced rule).
func allows(rules []rbacv1.PolicyRule, p permission) bool {
	res := p.resource
	if p.subresource != "" {
		res += "/" + p.subresource
	}
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, p.group) && slices.Contains(r.Resources, res) && slices.Contains(r.Verbs, p.verb) &&
			(len(r.ResourceNames) == 0 || p.name != "" && slices.Contains(r.ResourceNames, p.name))
	})
}

// TestDeployRBAC checks the roles against what the command asks for in every mode, for
// each controller: each permission -controllers=node needs is granted by the node
// ClusterRole (rbac.yaml) and each that -controllers=device needs by the device one
// (device/rbac.yaml), or, for the Lease, by the Role in its own namespace; and each
// permission a role grants is needed by some mode of its controller.
func TestDeployRBAC(t *testing.T) {
	objs := manifests(t)
	clusterRoles := map[string]*rbacv1.ClusterRole{}
	for _, o := range objs["*v1.ClusterRole"] {
		clusterRoles[o.(*rbacv1.ClusterRole).Name] = o.(*rbacv1.ClusterRole)
	}
	bound := map[string]bool{}
	for _, b := range objs["*v1.ClusterRoleBinding"] {
		bound[b.(*rbacv1.ClusterRoleBinding).RoleRef.Name] = true
	}
	require.True(t, bound[authDelegator.Name], "deploy/ binds %s", authDelegator.Name)
	clusterRoles[authDelegator.Name] = authDelegator
	role := objs["*v1.Role"][0].(*rbacv1.Role)
	ns := objs["*v1.Namespace"][0].(*v1.Namespace).Name
	sa := objs["*v1.ServiceAccount"][0].(*v1.ServiceAccount).Name
	subjects := []rbacv1.Subject{objs["*v1.RoleBinding"][0].(*rbacv1.RoleBinding).Subjects[0]}
	for _, b := range objs["*v1.ClusterRoleBinding"] {
		subjects = append(subjects, b.(*rbacv1.ClusterRoleBinding).Subjects[0])
		assert.Contains(t, clusterRoles, b.(*rbacv1.ClusterRoleBinding).RoleRef.Name)
	}
	for _, b := range subjects {
		assert.Equal(t, rbacv1.Subject{Kind: "ServiceAccount", Name: sa, Namespace: ns}, b)
	}
	assert.Equal(t, ns, role.Namespace)

	neededByLease := map[string]bool{}
	neededByReviews := map[string]bool{}
	for controller, clusterRole := range map[string]string{controllerNode: "taintevict-controller", controllerDevice: "taintevict-controller-device"} {
		cluster := clusterRoles[clusterRole]
		require.NotNil(t, cluster, clusterRole)
		needed := map[string]bool{}
		for _, args := range [][]string{{"-mode=delete"}, {"-mode=evict", "-pdb-timeout=1m"}, {"-mode=dry-run", "-metrics-addr=:8443"}} {
			cfg := flagsOf(t, append(args, "-kubeconfig=x", "-controllers="+controller, "-leader-elect", "-leader-elect-namespace="+ns)...)
			for _, p := range needs(cfg) {
				key := p.group + " " + p.resource + " " + p.subresource + " " + p.verb
				if strings.HasSuffix(p.resource, "reviews") {
					neededByReviews[key] = true
					assert.True(t, allows(authDelegator.Rules, p), "%s grants %s", authDelegator.Name, p)
					assert.False(t, allows(cluster.Rules, p), "%s does not grant %s", clusterRole, p)
					continue
				}
				if p.namespace != "" {
					neededByLease[key] = true
					assert.Equal(t, ns, p.namespace)
					assert.True(t, allows(role.Rules, p), "the Role grants %s", p)
					assert.False(t, allows(cluster.Rules, p), "%s does not grant %s", clusterRole, p)
					continue
				}
				needed[key] = true
				assert.True(t, allows(cluster.Rules, p), "%s grants %s", clusterRole, p)
			}
		}
		assertAllNeeded(t, clusterRole, cluster.Rules, needed)
	}
	assertAllNeeded(t, role.Name, role.Rules, neededByLease)
	assertAllNeeded(t, authDelegator.Name, authDelegator.Rules, neededByReviews)
	assert.Len(t, neededByReviews, 2, "tokenreviews and subjectaccessreviews")
}

// assertAllNeeded checks that every permission of rules is in needed.
func assertAllNeeded(t *testing.T, name string, rules []rbacv1.PolicyRule, needed map[string]bool) {
	t.Helper()
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, v := range r.Verbs {
					assert.True(t, needed[g+" "+resource+" "+sub+" "+v], "%s grants, and no mode needs: %s %s %s", name, g, res, v)
				}
			}
		}
	}
}
