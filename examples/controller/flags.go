package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/lease"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/examples/internal/budgetflags"
)

// AutoKubeconfig is the -kubeconfig value that means "where kubectl would look":
// $KUBECONFIG, else ~/.kube/config, else the in-cluster configuration when run in a pod.
// It has to be asked for: a program that can delete pods must not pick up a cluster from
// the environment by accident.
const AutoKubeconfig = "auto"

// config is what the command line says.
type config struct {
	kubeconfig       string // "" for the in-memory demo
	mode             clientgo.Mode
	pdbTimeout       time.Duration
	workers          int
	deleteWorkers    int
	maxDeleteWorkers int
	qps              float64
	burst            int
	leaderElect      bool
	leNamespace      string
	leLease          time.Duration
	leRenew          time.Duration
	leRetry          time.Duration
	metricsAddr      string
	serving          servingFlags
	admission        admissionFlags
	budgets          budgetflags.Flags
	manager          managerFlags
	device           deviceFlags
	clients          clientFlags
	seconds          int64 // api-1's toleration in the demo

	// reach is not a flag: runCluster sets it to the Reachability its clients report to.
	reach *clientgo.Reachability

	modeFlag clientgo.Mode // what -mode said, to tell a contradiction with -dry-run
	dryRun   bool          // what -dry-run said
}

// inCluster reports whether the process runs in a pod, as client-go's in-cluster
// configuration tells: the API server's service is in the environment.
func inCluster() bool {
	return os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != ""
}

// podNamespace is the namespace of the pod the process runs in: $POD_NAMESPACE (the
// Deployment sets it from the downward API), else the service account's, else "".
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// newFlagSet defines the flags on cfg, with their defaults.
func newFlagSet(cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "run against the cluster of this kubeconfig file (\""+AutoKubeconfig+"\": $KUBECONFIG, else ~/.kube/config, else in-cluster); without it, run the in-memory demo")
	cfg.mode = clientgo.ModeDelete
	fs.Func("mode", "how pods are removed: delete (kube's way: DisruptionTarget, then delete), evict (the Eviction API: PodDisruptionBudgets are honoured) or dry-run (report only) (default delete)", func(s string) error {
		switch m := clientgo.Mode(s); m {
		case clientgo.ModeDelete, clientgo.ModeEvict, clientgo.ModeDryRun:
			if !cfg.dryRun {
				cfg.mode = m
			}
			cfg.modeFlag = m
			return nil
		}
		return errors.New("want delete, evict or dry-run")
	})
	fs.BoolFunc("dry-run", "the same as -mode=dry-run", func(s string) error {
		switch s {
		case "true":
			cfg.mode, cfg.dryRun = clientgo.ModeDryRun, true
		case "false":
		default:
			return errors.New("want true or false")
		}
		return nil
	})
	fs.DurationVar(&cfg.pdbTimeout, "pdb-timeout", 0, "with -mode=evict: delete a pod anyway once PodDisruptionBudgets have refused its eviction for this long (0: never)")
	fs.IntVar(&cfg.workers, "workers", 8, "goroutines that process node and pod updates")
	fs.IntVar(&cfg.deleteWorkers, "delete-workers", 0, "Deleter calls that may run at once. 0 (the default) lets the number follow the throughput: it starts at 8 and moves up to -max-delete-workers while more calls in flight complete more calls a second, holds where they stop rising (the API server at its capacity, or the client's rate limiter, -kube-api-qps and -kube-api-burst, at any QPS), and backs off when the API server refuses calls for load (429, 503, timeouts); a positive value pins it. The device side (-controllers) follows the same rule with the same bounds")
	fs.IntVar(&cfg.maxDeleteWorkers, "max-delete-workers", 128, "the most Deleter calls that may run at once while -delete-workers is 0 (for memory and fairness)")
	fs.Float64Var(&cfg.qps, "kube-api-qps", 50, "queries per second to the API server")
	fs.IntVar(&cfg.burst, "kube-api-burst", 100, "burst of queries to the API server")
	fs.BoolVar(&cfg.leaderElect, "leader-elect", inCluster(), "run the Manager only while holding a Lease (default true in a pod)")
	fs.StringVar(&cfg.leNamespace, "leader-elect-namespace", podNamespace(), "namespace of the Lease (default: the pod's)")
	fs.DurationVar(&cfg.leLease, "leader-elect-lease-duration", lease.DefaultLeaseDuration, "how long a standby waits after the leader's last renewal before it takes the Lease")
	fs.DurationVar(&cfg.leRenew, "leader-elect-renew-deadline", lease.DefaultRenewDeadline, "how long the leader tries to renew before it gives up and exits")
	fs.DurationVar(&cfg.leRetry, "leader-elect-retry-period", lease.DefaultRetryPeriod, "time between tries to take or renew the Lease")
	fs.StringVar(&cfg.metricsAddr, "metrics-addr", "", "serve /metrics, /healthz and /readyz on this address, e.g. :8080 (default: none); over HTTPS with -kubeconfig, see -metrics-secure")
	cfg.serving.define(fs)
	cfg.admission.define(fs)
	cfg.budgets.Define(fs)
	cfg.manager.define(fs)
	cfg.device.define(fs)
	cfg.clients.define(fs)
	fs.Int64Var(&cfg.seconds, "toleration-seconds", 3, "in the demo, how long api-1 tolerates the unreachable taint")
	// Of klog's flags, only -v: the others (log files, headers) are of no use here.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Var(klogFlags.Lookup("v").Value, "v", "log verbosity (klog): 2 and up add the Manager's and client-go's logs, 3 the Events as they are written")
	return fs
}

// parseFlags parses and validates args. Errors are one line; -h writes the usage to
// stderr and returns flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := newFlagSet(&cfg)
	fs.SetOutput(io.Discard) // errors are reported in one line by the caller
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "Usage of controller:")
			fs.PrintDefaults()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if cfg.dryRun && cfg.modeFlag != "" && cfg.modeFlag != clientgo.ModeDryRun {
		return cfg, fmt.Errorf("-dry-run contradicts -mode=%s", cfg.modeFlag)
	}
	return cfg, cfg.validate()
}

// validate checks the values the flag package cannot.
func (cfg config) validate() error {
	if err := cfg.budgets.Validate(); err != nil {
		return err
	}
	if err := cfg.manager.validate(); err != nil {
		return err
	}
	if err := cfg.device.validate(); err != nil {
		return err
	}
	if cfg.kubeconfig == "" && !slices.Equal(cfg.device.controllers, []string{controllerNode}) {
		return errors.New("-controllers other than node needs -kubeconfig: the demo is of nodes")
	}
	if err := cfg.clients.validate(); err != nil {
		return err
	}
	switch {
	case cfg.pdbTimeout < 0:
		return fmt.Errorf("-pdb-timeout must not be negative, got %s", cfg.pdbTimeout)
	case cfg.pdbTimeout > 0 && cfg.mode != clientgo.ModeEvict:
		return fmt.Errorf("-pdb-timeout needs -mode=evict (the mode is %s)", cfg.mode)
	case cfg.workers < 1:
		return fmt.Errorf("-workers must be at least 1, got %d", cfg.workers)
	case cfg.deleteWorkers < 0:
		return fmt.Errorf("-delete-workers must not be negative, got %d", cfg.deleteWorkers)
	case cfg.maxDeleteWorkers < 1:
		return fmt.Errorf("-max-delete-workers must be at least 1, got %d", cfg.maxDeleteWorkers)
	case !(cfg.qps > 0) || cfg.qps > 1e6:
		return fmt.Errorf("-kube-api-qps must be above 0 and at most 1e6, got %g", cfg.qps)
	case cfg.burst < 1:
		return fmt.Errorf("-kube-api-burst must be at least 1, got %d", cfg.burst)
	case cfg.seconds < 0:
		return errors.New("-toleration-seconds must not be negative")
	}
	if cfg.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(cfg.metricsAddr); err != nil {
			return fmt.Errorf("-metrics-addr %q: want host:port or :port: %v", cfg.metricsAddr, err)
		}
	}
	if err := cfg.serving.validate(cfg.kubeconfig, cfg.metricsAddr); err != nil {
		return err
	}
	if err := cfg.admission.validate(cfg.kubeconfig); err != nil {
		return err
	}
	if cfg.leaderElect {
		return cfg.validateLeaderElection()
	}
	return nil
}

// validateLeaderElection checks what client-go's leader election would refuse, in its terms.
func (cfg config) validateLeaderElection() error {
	switch {
	case cfg.leNamespace == "":
		return errors.New("-leader-elect needs -leader-elect-namespace (no pod namespace found)")
	case cfg.leRetry <= 0:
		return fmt.Errorf("-leader-elect-retry-period must be positive, got %s", cfg.leRetry)
	case float64(cfg.leRenew) <= 1.2*float64(cfg.leRetry):
		return fmt.Errorf("-leader-elect-renew-deadline (%s) must be more than 1.2 × -leader-elect-retry-period (%s)", cfg.leRenew, cfg.leRetry)
	case cfg.leLease <= cfg.leRenew:
		return fmt.Errorf("-leader-elect-lease-duration (%s) must be more than -leader-elect-renew-deadline (%s)", cfg.leLease, cfg.leRenew)
	}
	return nil
}

// controllerOptions are the Controller's options of cfg; the caller adds the observers,
// the Meter and the Elector.
func (cfg config) controllerOptions() clientgo.Options {
	opts := clientgo.Options{
		Mode: cfg.mode, PDBTimeout: cfg.pdbTimeout,
		Manager: eviction.Options{Workers: cfg.workers, ActWorkers: cfg.deleteWorkers, MaxActWorkers: cfg.maxDeleteWorkers},
	}
	cfg.budgets.Apply(&opts.Manager)
	cfg.manager.apply(&opts.Manager)
	return opts
}

// leaseOptions are the Lease's options of cfg.
func (cfg config) leaseOptions() lease.Options {
	return lease.Options{Namespace: cfg.leNamespace, LeaseDuration: cfg.leLease, RenewDeadline: cfg.leRenew, RetryPeriod: cfg.leRetry}
}

// elector returns the Elector of cfg's Lease through client, or nil without -leader-elect.
func (cfg config) elector(client kubernetes.Interface) (clientgo.Elector, error) {
	if !cfg.leaderElect {
		return nil, nil
	}
	e, err := lease.New(client, cfg.leaseOptions())
	if err != nil {
		return nil, err
	}
	return e, nil
}
