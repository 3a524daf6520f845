// Command controller is a taint eviction controller built on client-go and
// github.com/taintevict/taintevict/eviction: what kube-controller-manager's taint eviction
// controller does, with the eviction logic taken from the library.
//
//	go run .                                         # an in-memory cluster; ends by itself
//	go run . -kubeconfig ~/.kube/config -dry-run     # a real cluster; reports only
//	go run . -kubeconfig=auto -dry-run               # $KUBECONFIG, or ~/.kube/config
//
// Without -kubeconfig it never reads a kubeconfig, not even $KUBECONFIG: it runs a
// demonstration against a fake clientset and stops on its own. With -kubeconfig it runs
// against that cluster until SIGINT or SIGTERM, and evicts pods for real unless -dry-run
// is given.
//
// The pieces, each in its own file so that they can be copied: informers.go (the
// informers, the spec.nodeName index, the event handlers), cache.go (the eviction.Cache
// over the listers), deleter.go (the eviction.Deleter: mark, then delete with a UID
// precondition), observer.go (the eviction.Observer: Events and log lines) and
// controller.go (the wiring, and the order of start and stop). demo.go is the in-memory
// scenario.
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

	"k8s.io/client-go/kubernetes"

	"github.com/taintevict/taintevict/eviction"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/taintevict/taintevict/examples/controller/clientgo"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// AutoKubeconfig is the -kubeconfig value that means "where kubectl would look":
// $KUBECONFIG, else ~/.kube/config, else the in-cluster configuration when run in a pod.
// It has to be asked for: a program that can delete pods must not pick up a cluster from
// the environment by accident.
const AutoKubeconfig = "auto"

// errInterrupted says that the demo was stopped by a signal before it was done.
var errInterrupted = errors.New("interrupted")

// config is what the command line says.
type config struct {
	kubeconfig string // "" for the in-memory demo
	dryRun     bool
	seconds    int64 // api-1's toleration in the demo
}

// parseFlags parses args into a config. -v sets klog's global verbosity.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "run against the cluster of this kubeconfig file (\""+AutoKubeconfig+"\": $KUBECONFIG, else ~/.kube/config, else in-cluster); without it, run the in-memory demo")
	fs.BoolVar(&cfg.dryRun, "dry-run", false, "report what would be evicted, and change nothing")
	fs.Int64Var(&cfg.seconds, "toleration-seconds", 3, "in the demo, how long api-1 tolerates the unreachable taint")
	// Of klog's flags, only -v: the others (log files, headers) are of no use here.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Var(klogFlags.Lookup("v").Value, "v", "log verbosity (klog): 2 and up add the Manager's and client-go's logs, 3 the Events as they are recorded")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if cfg.seconds < 0 {
		return cfg, errors.New("-toleration-seconds must not be negative")
	}
	return cfg, nil
}

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
		err = RunDemo(ctx, NewDemoClientset(cfg.seconds), stdout, DemoOptions{Seconds: cfg.seconds, DryRun: cfg.dryRun})
	} else {
		err = runCluster(ctx, cfg, stdout)
	}
	switch {
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(stderr, "controller: interrupted")
		return 130
	case err != nil:
		fmt.Fprintln(stderr, "controller:", err)
		return 1
	}
	return 0
}

// runCluster runs the controller against the cluster of cfg.kubeconfig until ctx is done.
func runCluster(ctx context.Context, cfg config, out io.Writer) error {
	rc, err := restConfig(cfg.kubeconfig)
	if err != nil {
		return err
	}
	rc.UserAgent = clientgo.Component
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	return watchCluster(ctx, client, rc.Host, cfg.dryRun, out)
}

// watchCluster runs a Controller over client until ctx is done, and says what it does.
func watchCluster(ctx context.Context, client kubernetes.Interface, host string, dryRun bool, out io.Writer) error {
	mode := clientgo.ModeDelete
	if dryRun {
		mode = clientgo.ModeDryRun
	}
	c, err := clientgo.NewController(ctx, client, clientgo.NewFactory(client), clientgo.Options{
		Mode:      mode,
		Observers: []eviction.Observer{&lineObserver{out: out}},
	})
	if err != nil {
		return err
	}
	say := "EVICTING pods for real (use -dry-run to only report)"
	if dryRun {
		say = "dry run: reporting only, changing nothing"
	}
	fmt.Fprintf(out, "cluster %s: %s; stop with Ctrl-C\n", host, say)

	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(ctx) }()
	select {
	case <-c.Synced():
		fmt.Fprintln(out, "caches synced; the Manager works through the nodes and pods")
	case err := <-stopped:
		return err
	}
	return <-stopped
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
	return clientcmd.BuildConfigFromFlags("", path)
}
