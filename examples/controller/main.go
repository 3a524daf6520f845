// Command controller is a drop-in taint eviction controller built on client-go and
// github.com/taintevict/taintevict/eviction: what kube-controller-manager's taint eviction
// controller does, with the eviction logic taken from the library, leader election on a
// Lease, Prometheus metrics, and a choice of kube's delete or the Eviction API.
//
//	go run .                                            # an in-memory cluster; ends by itself
//	go run . -kubeconfig ~/.kube/config -mode=dry-run   # a real cluster; reports only
//	go run . -kubeconfig=auto -mode=evict               # $KUBECONFIG, ~/.kube/config or in-cluster
//
// Without -kubeconfig it never reads a kubeconfig, not even $KUBECONFIG: it runs a
// demonstration against a fake clientset and stops on its own. With -kubeconfig it runs
// against that cluster until SIGINT or SIGTERM, and evicts pods for real unless
// -mode=dry-run is given. In a pod, deploy/ has the manifests.
//
// The pieces live in the importable package
// github.com/taintevict/taintevict/clientgo; this command is flags
// (flags.go), the cluster mode (cluster.go), a line per decision on stdout (log.go) and
// the in-memory scenario (demo.go), which waits with clientgo.Controller.WaitIdle until the
// informers have handed the Manager its changes and it has done what is due.
//
// Exit codes: 0 after a clean stop (SIGTERM in cluster mode), 1 for a failure (a
// kubeconfig that cannot be loaded, an API server that cannot be reached, missing RBAC,
// a lost Lease), 2 for bad flags, 130 when the demo is interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errInterrupted says that the demo was stopped by a signal before it was done.
var errInterrupted = errors.New("interrupted")

// run is main without the exit: the exit code of a run with args.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "controller:", err)
		return 2
	}
	defer klog.Flush()

	// The first SIGINT or SIGTERM stops the run cleanly; a second one kills the process,
	// since stop restores the default handling.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	ctx = klog.NewContext(ctx, klog.Background())

	if cfg.kubeconfig == "" {
		err = RunDemo(ctx, NewDemoClientset(cfg.seconds), stdout, DemoOptions{Seconds: cfg.seconds, Config: cfg})
	} else {
		err = runCluster(ctx, cfg, stdout, stderr)
	}
	switch {
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(stderr, "controller: interrupted")
		return 130
	case err != nil:
		fmt.Fprintln(stderr, "controller:", oneLine(err))
		return 1
	}
	return 0
}

// restConfig loads the client configuration of the kubeconfig file path, or, for
// [AutoKubeconfig], as kubectl and client-go find it: from $KUBECONFIG, else
// ~/.kube/config, else the in-cluster configuration of a pod. A path is used
// alone: $KUBECONFIG is not merged in. A leading "~/" is expanded, for -kubeconfig=~/...
// where the shell does not.
func restConfig(path string) (*rest.Config, error) {
	if path == AutoKubeconfig {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	}
	if rel, ok := strings.CutPrefix(path, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, err
		}
		path = filepath.Join(home, rel)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no kubeconfig file: %w", err)
	}
	return clientcmd.BuildConfigFromFlags("", path)
}
