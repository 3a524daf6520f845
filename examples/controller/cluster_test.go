package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// waitWriter is an output the tests can wait on: each write wakes the waiter, which looks
// again for what it waits for.
type waitWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	wake chan struct{}
}

func newWaitWriter() *waitWriter { return &waitWriter{wake: make(chan struct{}, 1)} }

func (w *waitWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	n, err := w.buf.Write(p)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return n, err
}

func (w *waitWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor returns once s has been written, and fails the test after failAfter.
func (w *waitWriter) waitFor(t *testing.T, s string) {
	t.Helper()
	timeout := time.NewTimer(failAfter)
	defer timeout.Stop()
	for !strings.Contains(w.String(), s) {
		select {
		case <-w.wake:
		case <-timeout.C:
			t.Fatalf("%q not written after %s; output:\n%s", s, failAfter, w.String())
		}
	}
}

// taintedCluster is a cluster whose node-1 has been unreachable for a minute, with a pod
// that does not tolerate it and one that tolerates it forever.
func taintedCluster() *fake.Clientset {
	added := metav1.NewTime(time.Now().Add(-time.Minute))
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: Unreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &added}}},
	}
	agent := podOn("logging", "agent-1", "node-1")
	agent.Spec.Tolerations = []v1.Toleration{{Key: Unreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
	client := fake.NewClientset(node, podOn("shop", "web-1", "node-1"), agent)
	allow(client)
	return client
}

// allow answers SelfSubjectAccessReviews on a fake clientset: allowed, except the
// permissions named in forbidden ("pods/eviction create").
func allow(client *fake.Clientset, forbidden ...string) {
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		attr := r.Spec.ResourceAttributes
		name := attr.Resource
		if attr.Subresource != "" {
			name += "/" + attr.Subresource
		}
		r.Status.Allowed = !slices.Contains(forbidden, name+" "+attr.Verb)
		return true, r, nil
	})
}

// TestWatchClusterDryRun runs the cluster mode (what -kubeconfig runs, after loading the
// configuration) with -dry-run: it reports the pod it would evict and writes nothing.
func TestWatchClusterDryRun(t *testing.T) {
	client := taintedCluster()
	out := newWaitWriter()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- serve(ctx, client, nil, "https://test", flagsOf(t, "-dry-run"), out, io.Discard) }()

	out.waitFor(t, "would evict shop/web-1 from node-1 (dry run)")
	cancel()
	require.NoError(t, <-stopped)

	assert.Contains(t, out.String(), "dry run: reporting only")
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		case "create":
			assert.Equal(t, "selfsubjectaccessreviews", a.GetResource().Resource)
		default:
			t.Errorf("dry run sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestWatchCluster runs the cluster mode for real: the pod that does not tolerate the
// taint is evicted at once (its taint is a minute old), the other stays.
func TestWatchCluster(t *testing.T) {
	client := taintedCluster()
	out := newWaitWriter()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- serve(ctx, client, nil, "https://test", flagsOf(t), out, io.Discard) }()

	out.waitFor(t, "evicted    shop/web-1 from node-1")
	assert.Contains(t, out.String(), "removed    shop/web-1 by delete")
	cancel()
	require.NoError(t, <-stopped)

	_, err := client.CoreV1().Pods("shop").Get(t.Context(), "web-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "web-1 evicted: %v", err)
	_, err = client.CoreV1().Pods("logging").Get(t.Context(), "agent-1", metav1.GetOptions{})
	assert.NoError(t, err, "agent-1 stays")
}

// TestRunStopsOnSignal interrupts the demo while it waits for a toleration to run out: the
// program stops cleanly (every goroutine ends, which TestMain checks) and says so.
func TestRunStopsOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			stdout, stderr := newWaitWriter(), newWaitWriter()
			code := make(chan int, 1)
			go func() { code <- run([]string{"-toleration-seconds=600"}, stdout, stderr) }()

			stdout.waitFor(t, "waiting for api-1's 600s toleration to run out")
			require.NoError(t, syscall.Kill(syscall.Getpid(), sig))
			select {
			case c := <-code:
				assert.Equal(t, 130, c)
			case <-time.After(failAfter):
				t.Fatal("run did not return after the signal")
			}
			assert.Contains(t, stderr.String(), "interrupted")
			assert.NotContains(t, stdout.String(), "pods left")
		})
	}
}

// TestServeForbidden: RBAC that forbids what the mode needs stops the controller before it
// starts, with one line naming each missing permission.
func TestServeForbidden(t *testing.T) {
	client := taintedCluster()
	allow(client, "pods/eviction create", "pods delete")
	err := serve(t.Context(), client, nil, "https://test", flagsOf(t, "-mode=evict"), io.Discard, io.Discard)
	assert.EqualError(t, err, "forbidden: pods/eviction create (see deploy/rbac.yaml)")
	err = serve(t.Context(), client, nil, "https://test", flagsOf(t, "-mode=evict", "-pdb-timeout=1m"), io.Discard, io.Discard)
	assert.EqualError(t, err, "forbidden: pods delete, pods/eviction create (see deploy/rbac.yaml)")

	le := flagsOf(t, "-mode=dry-run", "-leader-elect", "-leader-elect-namespace=ops")
	assert.Equal(t, []string{"pods list", "pods watch", "nodes list", "nodes watch",
		"leases.coordination.k8s.io taintevict-controller get in namespace ops", "leases.coordination.k8s.io create in namespace ops",
		"leases.coordination.k8s.io taintevict-controller update in namespace ops"}, fmtAll(needs(le)))
}

func fmtAll(ps []permission) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://%s:6443"}
users:
- name: u
  user: {token: "not-a-secret"}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

func writeKubeconfig(t *testing.T, dir, host string) string {
	t.Helper()
	path := filepath.Join(dir, host+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(testKubeconfig, "%s", host)), 0o600))
	return path
}

// TestRestConfig loads configurations without connecting anywhere: an explicit path is used
// alone, "auto" follows $KUBECONFIG, and "~/" is the home directory.
func TestRestConfig(t *testing.T) {
	dir := t.TempDir()
	explicit := writeKubeconfig(t, dir, "explicit.example")
	fromEnv := writeKubeconfig(t, dir, "env.example")
	t.Setenv("KUBECONFIG", fromEnv)
	t.Setenv("HOME", dir)

	rc, err := restConfig(explicit)
	require.NoError(t, err)
	assert.Equal(t, "https://explicit.example:6443", rc.Host, "an explicit path ignores $KUBECONFIG")

	rc, err = restConfig(AutoKubeconfig)
	require.NoError(t, err)
	assert.Equal(t, "https://env.example:6443", rc.Host)

	rc, err = restConfig("~/explicit.example.yaml")
	require.NoError(t, err)
	assert.Equal(t, "https://explicit.example:6443", rc.Host)

	_, err = restConfig(filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, "no kubeconfig file")
}

// TestRunClusterFaults: a kubeconfig that is missing or does not parse, and an API server
// that cannot be reached, each end the run with one line that says so, and exit code 1.
func TestRunClusterFaults(t *testing.T) {
	dir := t.TempDir()
	garbled := filepath.Join(dir, "garbled.yaml")
	require.NoError(t, os.WriteFile(garbled, []byte("clusters: [this is not\n  a kubeconfig"), 0o600))
	// 127.0.0.1 port 1: nothing listens there, so the connection is refused at once.
	unreachable := filepath.Join(dir, "unreachable.yaml")
	require.NoError(t, os.WriteFile(unreachable, []byte(strings.ReplaceAll(testKubeconfig, "https://%s:6443", "https://127.0.0.1:1")), 0o600))
	tests := []struct{ name, kubeconfig, want string }{
		{"missing", filepath.Join(dir, "missing"), "controller: kubeconfig " + filepath.Join(dir, "missing") + ": no kubeconfig file"},
		{"garbled", garbled, "controller: kubeconfig " + garbled + ": "},
		{"unreachable", unreachable, "controller: cannot reach the API server at https://127.0.0.1:1: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 1, run([]string{"-kubeconfig", tc.kubeconfig, "-leader-elect=false"}, &stdout, &stderr))
			assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
			assert.Empty(t, stdout.String())
		})
	}
}

// withDevice adds to client a device that its driver tainted a minute ago, and the pod ml/train
// whose claim was allocated it.
func withDevice(t *testing.T, client *fake.Clientset) {
	t.Helper()
	added := metav1.NewTime(time.Now().Add(-time.Minute))
	for _, o := range []runtime.Object{
		&resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpus"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: "gpu.example.com", Pool: resourcev1.ResourcePool{Name: "node-1", ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0", Taints: []resourcev1.DeviceTaint{{Key: "ecc", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &added}}}}}},
		&resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gpu"}, Status: resourcev1.ResourceClaimStatus{
			Allocation:  &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "train", UID: demoUID("ml", "train")}}}},
		withClaim(podOn("ml", "train", "node-2"), "gpu"),
	} {
		require.NoError(t, client.Tracker().Add(o))
	}
}

func withClaim(p *v1.Pod, claim string) *v1.Pod {
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: claim, ResourceClaimName: &claim}}
	return p
}

// TestWatchClusterControllers runs the cluster mode with each -controllers: node evicts
// the pod on the tainted node only, device the pod on the tainted device only, node,device
// both, under one Lease, and with both sides' metrics on the one port: kube's names of
// each side, and taintevict's labelled by controller.
func TestWatchClusterControllers(t *testing.T) {
	const (
		nodeKube   = "taint_eviction_controller_pod_deletions_total 1"
		deviceKube = "device_taint_eviction_controller_pod_deletions_total 1"
		nodeOurs   = `taintevict_evictions_total{controller="node",outcome="succeeded",reason="delete"} 1`
		deviceOurs = `taintevict_evictions_total{controller="device",outcome="succeeded",reason="delete"} 1`
	)
	for _, tc := range []struct {
		controllers string
		evicted     []string
		kept        []string
		series      []string // on /metrics, as lines
		notSeries   []string // not on /metrics
	}{
		{"node", []string{"evicted    shop/web-1 from node-1"}, []string{"ml/train"},
			[]string{nodeKube, nodeOurs}, []string{"device_taint_eviction_controller", `controller="device"`}},
		{"device", []string{"evicted    ml/train from gpu.example.com/node-1/gpu-0"}, []string{"shop/web-1"},
			[]string{deviceKube, deviceOurs}, []string{"\ntaint_eviction_controller", `controller="node"`}},
		{"node,device", []string{"evicted    shop/web-1 from node-1", "evicted    ml/train from gpu.example.com/node-1/gpu-0"}, nil,
			[]string{nodeKube, deviceKube, nodeOurs, deviceOurs}, nil},
	} {
		t.Run(tc.controllers, func(t *testing.T) {
			client := taintedCluster()
			withDevice(t, client)
			out := newWaitWriter()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			stopped := make(chan error, 1)
			addr := freeAddr(t)
			cfg := flagsOf(t, "-kubeconfig=x", "-controllers="+tc.controllers, "-leader-elect", "-leader-elect-namespace=ops",
				"-metrics-addr="+addr, "-metrics-secure=false")
			go func() { stopped <- serve(ctx, client, nil, "https://test", cfg, out, io.Discard) }()
			for _, s := range tc.evicted {
				out.waitFor(t, s)
			}
			_, body := get(t, "http://"+addr+"/metrics", "")
			for _, s := range tc.series {
				assert.Contains(t, body, "\n"+s+"\n")
			}
			for _, s := range tc.notSeries {
				assert.NotContains(t, body, s)
			}
			cancel()
			require.NoError(t, <-stopped)
			for _, name := range tc.kept {
				assert.NotContains(t, out.String(), "evicted    "+name, "not this controller's")
			}
			leases, err := client.CoordinationV1().Leases("ops").List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			assert.Len(t, leases.Items, 1, "one Lease")
		})
	}
}
