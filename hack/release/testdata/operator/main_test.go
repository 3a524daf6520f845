// This test is not built in the repository: hack/release-check.sh copies it beside
// main.go into a fresh module outside it, and runs it there on a real kube-apiserver and
// etcd (KUBEBUILDER_ASSETS), against the modules as the release would publish them.
package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// failAfter bounds every wait on the server: a failure timeout, not a wait.
const failAfter = time.Minute

// TestOperator runs the operator on a real API server, taints one of two nodes, and sees
// the pod that does not tolerate the taint evicted, the one that does kept, kube's metric
// on the operator's /metrics, and its /readyz pass; then it stops the operator.
func TestOperator(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: make kube-apiserver and etcd with, from the repository root: export KUBEBUILDER_ASSETS=$(bash hack/kube-assets.sh | tail -1)")
	}
	env := &envtest.Environment{ControlPlaneStartTimeout: 2 * time.Minute, ControlPlaneStopTimeout: time.Minute}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver and etcd: %v", err)
	}
	defer func() { _ = env.Stop() }()
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	for _, n := range []string{"node-1", "node-2"} {
		if _, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	forever := v1.Toleration{Key: "example.com/outage", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	for name, tols := range map[string][]v1.Toleration{"web": nil, "agent": {forever}} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: v1.PodSpec{
			NodeName: "node-1", Tolerations: tols, Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- run(runCtx, cfg, metricsAddr, probeAddr) }()
	defer func() {
		stop()
		if err := <-stopped; err != nil {
			t.Errorf("run: got %v, want nil once stopped", err)
		}
	}()

	poll(t, "the operator ready", func() bool { code, _ := get(probeAddr, "/readyz"); return code == http.StatusOK })
	node, err := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = []v1.Taint{{Key: "example.com/outage", Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: time.Now()}}}
	if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "web evicted", func() bool {
		pod, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && pod.DeletionTimestamp != nil
	})
	poll(t, "kube's metric counts the eviction", func() bool {
		_, body := get(metricsAddr, "/metrics")
		return strings.Contains(body, "\ntaint_eviction_controller_pod_deletions_total 1\n")
	})
	if agent, err := client.CoreV1().Pods("default").Get(ctx, "agent", metav1.GetOptions{}); err != nil || agent.DeletionTimestamp != nil {
		t.Errorf("agent, which tolerates the taint: got %v (error %v), want it kept", agent.DeletionTimestamp, err)
	}
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, failAfter, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%s: not after %s", what, failAfter)
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func get(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
