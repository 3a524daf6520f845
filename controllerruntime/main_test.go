package controllerruntime_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
)

// assetsCommand installs etcd and builds kube-apiserver; every message about missing
// assets names it.
const assetsCommand = "export KUBEBUILDER_ASSETS=$(bash hack/kube-assets.sh | tail -1)"

// The control plane every test and benchmark of the package shares: a real kube-apiserver
// and etcd. Tests keep apart by namespace and node names, and run one after another, since
// each runs a controller that sees every node.
var (
	env         *envtest.Environment
	adminConfig *rest.Config
	admin       kubernetes.Interface
)

// TestMain starts the control plane, runs the tests, stops it, and fails the package if
// any goroutine outlives them: managers, informers, Event writers, leader electors.
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	crlog.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard()) // client-go's leader election logs through klog
	dir, err := assetsDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "controllerruntime: %v\ncontrollerruntime: the tests run on a real kube-apiserver and etcd: make them and point KUBEBUILDER_ASSETS at them with (from the repository root): %s\n", err, assetsCommand)
		return 1
	}
	tmp, err := os.MkdirTemp("", "taintevict-crt-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "controllerruntime: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	env = &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		ControlPlaneStartTimeout: 2 * time.Minute, // two busy cores
		ControlPlaneStopTimeout:  time.Minute,
	}
	if err := configureAudit(tmp); err != nil {
		fmt.Fprintf(os.Stderr, "controllerruntime: %v\n", err)
		return 1
	}
	if adminConfig, err = env.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "controllerruntime: starting kube-apiserver and etcd from %s: %v\ncontrollerruntime: rebuild them with: %s\n", dir, err, assetsCommand)
		_ = env.Stop()
		return 1
	}
	adminConfig.QPS, adminConfig.Burst = 500, 1000 // the benchmark's cluster is built through it
	admin = kubernetes.NewForConfigOrDie(adminConfig)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "controllerruntime: stopping the control plane: %v\n", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "controllerruntime: goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	return code
}

// assetsDir returns $KUBEBUILDER_ASSETS, the folder that holds kube-apiserver and etcd, once
// it has checked that both are there.
func assetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return "", errors.New("KUBEBUILDER_ASSETS is not set")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if info, err := os.Stat(filepath.Join(dir, bin)); err != nil || info.Mode()&0o111 == 0 {
			return "", fmt.Errorf("no executable %s in KUBEBUILDER_ASSETS (%s)", bin, dir)
		}
	}
	return dir, nil
}
