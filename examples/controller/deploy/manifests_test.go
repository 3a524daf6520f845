package deploy

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestObjects(t *testing.T) {
	assert.Equal(t, []string{"namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "device/rbac.yaml", "explain.yaml", "flowschema.yaml", "metrics.yaml", "deployment.yaml"}, Files())
	objs, err := Objects()
	require.NoError(t, err)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, fmt.Sprintf("%T", o))
	}
	assert.Equal(t, []string{"*v1.Namespace", "*v1.ServiceAccount", "*v1.ClusterRole", "*v1.ClusterRoleBinding", "*v1.ClusterRoleBinding",
		"*v1.Role", "*v1.RoleBinding", "*v1.ClusterRole", "*v1.ClusterRoleBinding", "*v1.ClusterRole", "*v1.Role", "*v1.FlowSchema",
		"*v1.ClusterRole", "*v1.Service", "*v1.Deployment"}, kinds, "the Namespace first, the Deployment last")
	_, err = Read("nope.yaml")
	assert.ErrorContains(t, err, "deploy: ")
}

// The webhook's files are apart from Files: its objects, and the patch as a Deployment.
func TestWebhook(t *testing.T) {
	objs, patch, err := Webhook()
	require.NoError(t, err)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, fmt.Sprintf("%T", o))
	}
	assert.Equal(t, []string{"*v1.Service", "*v1.ValidatingWebhookConfiguration"}, kinds)
	assert.Equal(t, "*v1.Deployment", fmt.Sprintf("%T", patch))
	raw, err := Read(CertManagerFile)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "kind: Certificate")
	for _, f := range Files() {
		assert.NotContains(t, f, "webhook/", "the webhook is not applied with the rest")
	}
}

func TestDecodeErrors(t *testing.T) {
	_, err := decode([]byte("apiVersion: v1\nkind: NoSuchKind\n"))
	assert.Error(t, err)
	_, err = decode([]byte("{not yaml"))
	assert.Error(t, err)
	objs, err := decode([]byte("---\n---\n"))
	require.NoError(t, err)
	assert.Empty(t, objs)
}
