package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/taintevict/taintevict/examples/controller/deploy"
)

// The webhook's manifests fit one another and the command: the patch's arguments are valid
// and serve the port the Service targets with the Secret cert-manager makes; the
// configuration calls the paths the webhook serves, ignores its failures, and has
// cert-manager inject the CA of that Certificate.
func TestDeployWebhook(t *testing.T) {
	objs, patch, err := deploy.Webhook()
	require.NoError(t, err)
	require.Len(t, objs, 2)
	svc := objs[0].(*v1.Service)
	vwc := objs[1].(*admissionregistrationv1.ValidatingWebhookConfiguration)
	d := patch.(*appsv1.Deployment)

	// The patch: a valid command line serving the webhook on the Service's target port.
	c := d.Spec.Template.Spec.Containers[0]
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	t.Setenv("POD_NAMESPACE", svc.Namespace)
	cfg, err := parseFlags(c.Args, &strings.Builder{})
	require.NoError(t, err)
	var port v1.ContainerPort
	for _, p := range c.Ports {
		if p.Name == svc.Spec.Ports[0].TargetPort.String() {
			port = p
		}
	}
	require.NotZero(t, port.ContainerPort, "the container has the Service's target port %s", svc.Spec.Ports[0].TargetPort.String())
	assert.Equal(t, fmt.Sprintf(":%d", port.ContainerPort), cfg.admission.addr)
	require.Len(t, c.VolumeMounts, 1)
	assert.True(t, strings.HasPrefix(cfg.admission.certFile, c.VolumeMounts[0].MountPath+"/"))
	assert.True(t, strings.HasPrefix(cfg.admission.keyFile, c.VolumeMounts[0].MountPath+"/"))
	secret := d.Spec.Template.Spec.Volumes[0].Secret.SecretName

	// The configuration: the paths served, failures ignored, no side effects, short.
	paths := map[string]bool{}
	for _, w := range vwc.Webhooks {
		require.NotNil(t, w.FailurePolicy)
		assert.Equal(t, admissionregistrationv1.Ignore, *w.FailurePolicy, w.Name)
		assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *w.SideEffects, w.Name)
		assert.LessOrEqual(t, *w.TimeoutSeconds, int32(5), w.Name)
		assert.Equal(t, svc.Name, w.ClientConfig.Service.Name)
		assert.Equal(t, svc.Namespace, w.ClientConfig.Service.Namespace)
		assert.Equal(t, svc.Spec.Ports[0].Port, *w.ClientConfig.Service.Port)
		paths[*w.ClientConfig.Service.Path] = true
	}
	assert.Equal(t, map[string]bool{admitNodesPath: true, admitRulesPath: true}, paths)

	// cert-manager's Certificate: the Secret the patch mounts, the Service's DNS names, and
	// the CA the configuration asks to be injected.
	raw, err := deploy.Read(deploy.CertManagerFile)
	require.NoError(t, err)
	var cert *unstructured.Unstructured
	for doc := range strings.SplitSeq(string(raw), "\n---\n") {
		var u unstructured.Unstructured
		require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
		if u.GetKind() == "Certificate" {
			cert = &u
		}
	}
	require.NotNil(t, cert)
	gotSecret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	assert.Equal(t, secret, gotSecret)
	dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	assert.Contains(t, dns, svc.Name+"."+svc.Namespace+".svc")
	assert.Equal(t, cert.GetNamespace()+"/"+cert.GetName(), vwc.Annotations["cert-manager.io/inject-ca-from"])
}
