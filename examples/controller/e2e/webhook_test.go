package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/taintevict/taintevict/examples/controller/deploy"
)

// The override annotation of the deny guard (examples/controller, admission.go).
const overrideAnnotation = "taintevict.io/allow-mass-eviction"

// webhookCert makes a serving certificate for 127.0.0.1, signed by a CA made for it, and
// returns the files of the certificate and its key, and the CA bundle the API server is to
// trust.
func webhookCert(t *testing.T) (certFile, keyFile string, caBundle []byte) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKeyWithOptions(certutil.SelfSignedCertKeyOptions{
		Host: "127.0.0.1", AlternateIPs: []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	require.NoError(t, err)
	// The bundle holds the certificate and the CA that signed it; the server finds the CA.
	return writeFile(t, "tls.crt", certPEM), writeFile(t, "tls.key", keyPEM), certPEM
}

// registerWebhook registers deploy/webhook/webhook.yaml's ValidatingWebhookConfiguration,
// as it is (its rules, failure policy, timeouts, match conditions), but calling base (an
// https://HOST:PORT URL) with caBundle instead of the in-cluster Service, which no kubelet
// or kube-proxy here would reach. It is deleted when the test ends: every node update of
// the shared server goes through it meanwhile.
func registerWebhook(t *testing.T, base string, caBundle []byte) {
	t.Helper()
	objs, _, err := deploy.Webhook()
	require.NoError(t, err)
	var vwc *admissionregistrationv1.ValidatingWebhookConfiguration
	for _, o := range objs {
		if c, ok := o.(*admissionregistrationv1.ValidatingWebhookConfiguration); ok {
			vwc = c.DeepCopy()
		}
	}
	require.NotNil(t, vwc, "deploy/webhook/webhook.yaml has no ValidatingWebhookConfiguration")
	vwc.Name = fmt.Sprintf("e2e-taintevict-%d", nameSeq.Add(1))
	for i := range vwc.Webhooks {
		w := &vwc.Webhooks[i]
		w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + *w.ClientConfig.Service.Path), CABundle: caBundle}
	}
	_, err = admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), vwc, metav1.CreateOptions{})
	require.NoError(t, err, "registering the webhook")
	t.Cleanup(func() {
		err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), vwc.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the webhook configuration %s: %v", vwc.Name, err)
		}
	})
}

// warnings is a client-go WarningHandler that keeps the warnings the API server sends.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// take returns the warnings seen since the last call.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// warnedClient returns a client of the admin whose warnings go to the returned handler.
func warnedClient(t *testing.T) (kubernetes.Interface, *warnings) {
	t.Helper()
	w := &warnings{}
	rc := rest.CopyConfig(adminConfig)
	rc.WarningHandler = w
	return kubernetes.NewForConfigOrDie(rc), w
}

// startWithWebhook starts a controller that serves the webhook on a port of its own, with
// extra args, and registers deploy/'s configuration for it; it returns once both are
// ready.
func startWithWebhook(t *testing.T, args ...string) *process {
	t.Helper()
	certFile, keyFile, ca := webhookCert(t)
	addr := freeAddr(t)
	c := startController(t, "controller", append([]string{"-admission-addr=" + addr,
		"-admission-tls-cert-file=" + certFile, "-admission-tls-private-key-file=" + keyFile}, args...)...)
	registerWebhook(t, "https://"+addr, ca)
	return c
}

// taintWith puts the outage taint on node through client, and returns the update's error.
func (s *scene) taintWith(client kubernetes.Interface, node string, annotations map[string]string) error {
	n, err := client.CoreV1().Nodes().Get(s.ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: outage, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: time.Now().Truncate(time.Second)}})
	for k, v := range annotations {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[k] = v
	}
	_, err = client.CoreV1().Nodes().Update(s.ctx, n, metav1.UpdateOptions{})
	return err
}

// The webhook's warning arrives at a client-go client (its WarningHandler), as kubectl
// taint prints it, when a test taints a node; an update that adds no NoExecute taint gets
// none. The same for a DeviceTaintRule, with the device side.
func TestWebhookWarns(t *testing.T) {
	s := newDeviceScene(t, "gpu-0", "gpu-1")
	node := s.node("n")
	s.pod("web", node)
	s.pod("db", node, tolerate(ptr.To[int64](300)))
	s.pod("agent", node, tolerate(nil))
	s.podOnDevices("train-0", alloc{device: "gpu-0"})
	s.podOnDevices("train-1", alloc{device: "gpu-1", key: outage, seconds: ptr.To[int64](30)})
	startWithWebhook(t, "-controllers=node,device", "-mode=dry-run")
	client, seen := warnedClient(t)

	require.NoError(t, s.taintWith(client, node, nil))
	assert.Equal(t, []string{fmt.Sprintf("taintevict: taint %s:NoExecute on node %s evicts 1 pod now (1 namespace), 1 more within 5m0s; 1 tolerates it forever", outage, node)}, seen.take())

	// A label changes nothing the webhook looks at: no warning.
	n, err := client.CoreV1().Nodes().Get(s.ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	n.Labels = map[string]string{"e2e": "relabelled"}
	_, err = client.CoreV1().Nodes().Update(s.ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Empty(t, seen.take(), "a node update that adds no NoExecute taint")

	name := s.prefix + "-maintenance"
	_, err = client.ResourceV1().DeviceTaintRules().Create(s.ctx, &resourcev1.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.DeviceTaintRuleSpec{DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr.To(s.driver)},
			Taint: resourcev1.DeviceTaint{Key: outage, Effect: resourcev1.DeviceTaintEffectNoExecute}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	s.rules = append(s.rules, name)
	assert.Equal(t, []string{fmt.Sprintf("taintevict: DeviceTaintRule %s (taint %s:NoExecute, on 2 devices) evicts 1 pod now (1 namespace), 1 more within 30s", name, outage)}, seen.take())
}

// The deny guard refuses a taint that would evict more than the fraction of the cluster's
// pods at once, and says which annotation lets it through; with the annotation, the same
// taint goes through (with a warning that says so).
func TestWebhookDenies(t *testing.T) {
	s := newScene(t)
	node := s.node("n")
	for i := range 3 {
		s.pod(fmt.Sprintf("web-%d", i), node)
	}
	startWithWebhook(t, "-admission-deny-fraction=0.01", "-mode=dry-run")
	client, seen := warnedClient(t)

	err := s.taintWith(client, node, nil)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "a refusal: %v", err)
	assert.Contains(t, err.Error(), fmt.Sprintf("taintevict: taint %s:NoExecute on node %s would evict 3 of the cluster's", outage, node))
	assert.Contains(t, err.Error(), "set the annotation "+overrideAnnotation+"=true on the node "+node)
	n, err := admin.CoreV1().Nodes().Get(s.ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, fmt.Sprint(n.Spec.Taints), outage, "the refused taint is not there")
	seen.take()

	require.NoError(t, s.taintWith(client, node, map[string]string{overrideAnnotation: "true"}))
	got := seen.take()
	require.Len(t, got, 2, "%q", got)
	assert.Contains(t, got[1], "let through by the annotation "+overrideAnnotation+"=true")
}

// The webhook being down never blocks a taint: with failurePolicy Ignore, a taint goes
// through when nothing listens at the webhook's address (at once) and when something
// listens but never answers (after the configuration's timeout). The test logs how long the
// taint took in each case.
func TestWebhookDownNeverBlocks(t *testing.T) {
	s := newScene(t)
	_, _, ca := webhookCert(t)

	// Nothing listens.
	refused := freeAddr(t)
	registerWebhook(t, "https://"+refused, ca)
	node := s.node("refused")
	start := time.Now()
	require.NoError(t, s.taintWith(admin, node, nil), "a taint with the webhook down")
	took := time.Since(start)
	t.Logf("taint with nothing listening at the webhook's address: %s", took.Round(time.Millisecond))
	assert.Less(t, took, 3*time.Second, "a refused connection should not wait for the timeout")

	// Something accepts the connections and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	registerWebhook(t, "https://"+ln.Addr().String(), ca)
	node = s.node("hung")
	start = time.Now()
	require.NoError(t, s.taintWith(admin, node, nil), "a taint with the webhook hung")
	took = time.Since(start)
	timeout := 3 * time.Second // deploy/webhook/webhook.yaml's timeoutSeconds
	t.Logf("taint with the webhook hung: %s (timeoutSeconds %s)", took.Round(time.Millisecond), timeout)
	assert.Less(t, took, timeout+5*time.Second, "the taint waited longer than the webhook's timeout")
	n, err := admin.CoreV1().Nodes().Get(s.ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, strings.Contains(fmt.Sprint(n.Spec.Taints), outage), "the taint is there")
}
