package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The helm command, built once per test binary from the tool of ../../../hack/chart: Helm is
// a module of that module's build list, not of this one's, which the command shares.
var (
	helmOnce sync.Once
	helmBin  string
	helmErr  error
)

func helmCommand(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		helmBin = filepath.Join(binDir, "helm")
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", helmBin, "helm.sh/helm/v4/cmd/helm")
		cmd.Dir = "../../../hack/chart"
		if out, err := cmd.CombinedOutput(); err != nil {
			helmErr = fmt.Errorf("building helm in hack/chart (go build helm.sh/helm/v4/cmd/helm, bounded by %v): %v\n%s", buildTimeout, err, out)
		}
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmBin
}

// runHelm runs helm with args against the suite's API server, as its administrator, with
// a home of its own.
func runHelm(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helmCommand(t), append(args, "--kubeconfig", kubeconfig)...)
	cmd.Env = append(cmd.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestHelmChart: the Helm chart (../chart), installed by helm itself on the real API
// server with budgets set, is what the controller needs: its Deployment's args, as the
// server holds them, run the command (no kubelet would), as the chart's ServiceAccount,
// whose rights are only the chart's RBAC; it evicts the untolerated pod at once, and an
// untaint cancels a pending eviction. helm uninstall removes it all.
func TestHelmChart(t *testing.T) {
	const release, ns = "e2e", "e2e-helm"
	kubeconfig := writeKubeconfig(t, adminConfig)
	out, err := runHelm(t, kubeconfig, "install", release, "../chart", "--namespace", ns, "--create-namespace",
		"--set", "budgets.evictionRate=100", "--set", "budgets.inFlight=50", "--set", "leaderElection.retryPeriod=1s")
	require.NoError(t, err, "helm install: %s", out)
	t.Cleanup(func() {
		if out, err := runHelm(t, kubeconfig, "uninstall", release, "--namespace", ns, "--wait"); err != nil {
			t.Errorf("helm uninstall: %v: %s", err, out)
		}
		if _, err := admin.RbacV1().ClusterRoles().Get(context.Background(), "e2e-taintevict-controller", metav1.GetOptions{}); err == nil {
			t.Error("helm uninstall left the ClusterRole e2e-taintevict-controller")
		}
	})

	name := release + "-taintevict-controller"
	d, err := admin.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err, "the chart's Deployment")
	installed := d.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"-mode=delete", "-leader-elect=true", "-eviction-rate=100", "-in-flight=50", "-leader-elect-retry-period=1s"} {
		require.Contains(t, installed, want, "the installed Deployment's args")
	}
	// The suite gives the kubeconfig and the metrics port; the Lease's namespace is the
	// pod's own in a cluster (POD_NAMESPACE), the release's here.
	var args []string
	for _, a := range installed {
		if !strings.HasPrefix(a, "-kubeconfig=") && !strings.HasPrefix(a, "-metrics-addr=") {
			args = append(args, a)
		}
	}
	args = append(args, "-leader-elect-namespace="+ns)
	asChart := serviceAccountStarter(deployed{namespace: ns, serviceAccount: name})
	start := func(t *testing.T, name string, more ...string) *process {
		t.Helper()
		p := asChart(t, name, append(slices.Clone(args), more...)...)
		waitAudit(t, p.id, 1, holdsLease(ns))
		return p
	}
	t.Run("evict untolerated", func(t *testing.T) { evictUntolerated(t, start) })
	t.Run("untaint cancels", func(t *testing.T) { untaintCancels(t, start) })
}
