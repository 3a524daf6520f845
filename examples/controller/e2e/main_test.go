package e2e

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
)

// assetsCommand installs etcd and builds kube-apiserver; it is in every message about
// missing assets.
const assetsCommand = "bash hack/kube-assets.sh"

// slow turns on the scenarios that take most of the suite's time (the faults of the control
// plane, load while failing). hack/test.sh sets it when E2E_SLOW=1, as .ci/run does; without
// it those tests skip and say how to run them.
var slow = flag.Bool("e2e.slow", false, "also run the slow scenarios (faults of the control plane, load while failing)")

// needSlow skips the test unless -e2e.slow is set, and says how to set it.
func needSlow(t *testing.T) {
	t.Helper()
	if !*slow {
		t.Skip("a slow scenario: run it with go test ./e2e -args -e2e.slow (or E2E_SLOW=1 bash hack/test.sh)")
	}
}

// The API server every test of the binary shares. Tests keep apart by namespace and node
// names; they run one after another, since each runs a controller that sees every node.
var (
	env         *envtest.Environment
	adminConfig *rest.Config
	admin       kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	crlog.SetLogger(logr.Discard())
	dir, err := assetsDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\ne2e: build the assets with: %s (from the repository root)\n", err, assetsCommand)
		return 1
	}
	binDir, err = os.MkdirTemp("", "taintevict-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(binDir)
	env = &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		ControlPlaneStartTimeout: 2 * time.Minute, // two busy cores
		ControlPlaneStopTimeout:  time.Minute,
	}
	if err := configureAudit(binDir); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	start := time.Now()
	adminConfig, err = env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting kube-apiserver and etcd from %s: %v\ne2e: rebuild the assets with: %s\n", dir, err, assetsCommand)
		_ = env.Stop()
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: kube-apiserver and etcd from %s ready in %s\n", dir, time.Since(start).Round(10*time.Millisecond))
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: stopping the control plane: %v\n", err)
		}
	}()
	admin = kubernetes.NewForConfigOrDie(adminConfig)
	if err := buildController(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	return m.Run()
}

// assetsDir returns the folder holding kube-apiserver and etcd: $KUBEBUILDER_ASSETS if set,
// else the folder hack/kube-assets.sh builds into for the Kubernetes version that matches
// this module's client-go (v0.X.Y -> v1.X.Y).
func assetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		version, err := kubeVersion()
		if err != nil {
			return "", err
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache folder for the assets: %w", err)
		}
		dir = filepath.Join(cache, "taintevict", "kube-assets", version)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		path := filepath.Join(dir, bin)
		info, err := os.Stat(path)
		if err != nil {
			return "", fmt.Errorf("no %s in %s: %w", bin, dir, err)
		}
		if info.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s is not executable", path)
		}
	}
	return dir, nil
}

// kubeVersion is the kube-apiserver version that matches the client-go of this module's
// go.mod, as hack/kube-assets.sh computes it (v0.X.Y -> v1.X.Y).
func kubeVersion() (string, error) {
	data, err := os.ReadFile("../go.mod")
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "k8s.io/client-go" {
			continue
		}
		if v, ok := strings.CutPrefix(f[1], "v0."); ok {
			return "v1." + v, nil
		}
		return "", fmt.Errorf("unexpected client-go version %s in go.mod", f[1])
	}
	return "", errors.New("client-go is not in go.mod")
}
