// Command realapiserver runs kube's taint eviction controller and taintevict's drop-in side
// by side on a real kube-apiserver and etcd (package realapiserver): a fresh control plane
// for each run of each side, the same client budget for both, the API server's audit log as
// the judge. It prints the Markdown tables of BENCHMARKS.md:
//
//	go run ./cmd/realapiserver -runs 3 -budgets 50/100/90s,1000/2000/30s \
//	    -sides 'kube ours ours/delete-workers=64 ours/mode=evict ours/mode=evict/delete-workers=64' \
//	    -raw /tmp/realapiserver.jsonl
//
// The sides "flood/inflight=N" and "flood/mode=evict/inflight=N" measure the API server's
// capacity for the same requests (see realapiserver.Side); -side-profiles DIR writes a CPU
// profile of each side's process, and -apiserver-profiles DIR one of kube-apiserver.
//
// With -startup it measures instead the time from start to ready of taintevict's
// controller on a cluster of -startup-nodes × 20 pods, with each -content-types in turn:
//
//	go run ./cmd/realapiserver -startup -runs 5 -startup-nodes 1000
//
// With -report it runs nothing and prints the tables of the results an earlier run
// appended to -raw (or, with -startup, to -startup-raw).
//
// It needs kube-apiserver and etcd: $KUBEBUILDER_ASSETS, or the folder `bash
// hack/kube-assets.sh` builds (run from the repository's root). Run it from bench/, where
// it finds taintevict's FlowSchema in ../examples/controller/deploy.
//
// With -child it is a side's process, which the driver starts (see realapiserver.ChildArgs).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/taintevict/taintevict/bench/realapiserver"
)

var start = time.Now()

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "-child" {
		err = child(os.Args[1:])
	} else {
		crlog.SetLogger(logr.Discard()) // envtest's logs: the driver says what it does
		err = drive(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "realapiserver:", err)
		os.Exit(1)
	}
}

// child runs one side until SIGTERM.
func child(args []string) error {
	cfg, err := realapiserver.ParseChildArgs(args)
	if err != nil {
		return err
	}
	cfg.Start = start
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return realapiserver.RunChild(ctx, cfg, os.Stdout)
}

// flags are the driver's flags.
type flags struct {
	runs                     int
	budgets, sides           string
	nodes, podsPerNode       int
	toleration, timeout      time.Duration
	idleWindow, settle       time.Duration
	contentType              string
	eventsQPS                float64
	eventsBurst              int
	raw, flowSchema          string
	profiles, sideProfiles   string
	report                   bool
	startup                  bool
	startupNodes             int
	contentTypes, startupRaw string
}

func drive(args []string) error {
	var f flags
	fs := flag.NewFlagSet("realapiserver", flag.ContinueOnError)
	fs.IntVar(&f.runs, "runs", 3, "runs of each side at each budget (the sides' order rotates from run to run)")
	fs.StringVar(&f.budgets, "budgets", "50/100/90s,1000/2000/30s", "client budgets, QPS/BURST[/CPU-WINDOW], comma-separated: both sides get each; the control plane's CPU is counted for at least CPU-WINDOW after the taint, the same for every side, long enough for the slowest to write every Event")
	fs.StringVar(&f.sides, "sides", "kube ours ours/delete-workers=64 ours/mode=evict ours/mode=evict/delete-workers=64", "the sides, space-separated: kube, or ours[/mode=evict][/delete-workers=N]")
	fs.IntVar(&f.nodes, "nodes", 100, "nodes in the cluster")
	fs.IntVar(&f.podsPerNode, "pods-per-node", 20, "pods on each node; half of them tolerate the taint")
	fs.DurationVar(&f.toleration, "toleration", 300*time.Second, "how long the tolerating half tolerates the taint")
	fs.DurationVar(&f.settle, "settle", 10*time.Second, "how long a run waits once the side is synced, before it samples the idle CPU")
	fs.DurationVar(&f.idleWindow, "idle-window", 15*time.Second, "how long the control plane's idle CPU is sampled before the taint")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long a run waits for the evictions and the Events after the taint")
	fs.StringVar(&f.contentType, "content-type", realapiserver.ContentProtobuf, "the encoding of both sides (kube-controller-manager's default is protobuf)")
	fs.Float64Var(&f.eventsQPS, "events-qps", 50, "taintevict's -events-qps (its Events have a client of their own)")
	fs.IntVar(&f.eventsBurst, "events-burst", 100, "taintevict's -events-burst")
	fs.StringVar(&f.raw, "raw", "", "append each result as a JSON line to this file")
	fs.StringVar(&f.profiles, "apiserver-profiles", "", "a folder to write a CPU profile of kube-apiserver to for each run, over the budget's CPU window from the taint (SIDE-qpsQPS-runN.pprof)")
	fs.StringVar(&f.sideProfiles, "side-profiles", "", "a folder to write a CPU profile of each run's side process to, from its caches' sync until it stops (SIDE-qpsQPS-runN.pprof)")
	fs.StringVar(&f.flowSchema, "flowschema", realapiserver.FlowSchemaFile, "taintevict's FlowSchema")
	fs.BoolVar(&f.report, "report", false, "run nothing: print the tables of the results in -raw (or -startup-raw)")
	fs.BoolVar(&f.startup, "startup", false, "measure the time from start to ready of taintevict's controller instead")
	fs.IntVar(&f.startupNodes, "startup-nodes", 1000, "with -startup: nodes (of -pods-per-node pods each)")
	fs.StringVar(&f.contentTypes, "content-types", realapiserver.ContentJSON+","+realapiserver.ContentProtobuf, "with -startup: the encodings, comma-separated")
	fs.StringVar(&f.startupRaw, "startup-raw", "", "with -startup: append each result as a JSON line to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.report {
		if f.startup {
			rs, err := readRaw[realapiserver.StartupResult](f.startupRaw)
			realapiserver.StartupReport(os.Stdout, rs)
			return err
		}
		rs, err := readRaw[realapiserver.Result](f.raw)
		realapiserver.Report(os.Stdout, rs)
		return err
	}
	assets, err := realapiserver.AssetsDir()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := realapiserver.Client{ContentType: f.contentType, EventsQPS: float32(f.eventsQPS), EventsBurst: f.eventsBurst}
	if f.startup {
		client.QPS, client.Burst = 50, 100 // the command's defaults
		rs, err := realapiserver.Startup(ctx, realapiserver.StartupConfig{
			Assets: assets, FlowSchema: f.flowSchema, Self: self, Client: client, Runs: f.runs, Log: os.Stderr,
			Shape:        realapiserver.Shape{Nodes: f.startupNodes, PodsPerNode: f.podsPerNode, Toleration: f.toleration},
			ContentTypes: strings.Split(f.contentTypes, ","),
		})
		for _, r := range rs {
			err = errors.Join(err, appendRaw(f.startupRaw, r))
		}
		realapiserver.StartupReport(os.Stdout, rs)
		return err
	}
	budgets, err := parseBudgets(f.budgets)
	if err != nil {
		return err
	}
	var sides []realapiserver.Side
	for _, s := range strings.Fields(f.sides) {
		side, err := realapiserver.ParseSide(s)
		if err != nil {
			return err
		}
		sides = append(sides, side)
	}
	var results []realapiserver.Result
	for run := range f.runs {
		for _, b := range budgets {
			for order, side := range rotate(sides, run) {
				c := client
				c.QPS, c.Burst = b.qps, b.burst
				fmt.Fprintf(os.Stderr, "run %d, qps %g/burst %d, %s (load %.1f)\n", run+1, b.qps, b.burst, side, load())
				var profile, sideProfile string
				name := fmt.Sprintf("%s-qps%g-run%d.pprof", strings.ReplaceAll(side.String(), "/", "_"), b.qps, run+1)
				if f.profiles != "" {
					profile = filepath.Join(f.profiles, name)
				}
				if f.sideProfiles != "" {
					sideProfile = filepath.Join(f.sideProfiles, name)
				}
				res, err := realapiserver.Run(ctx, realapiserver.RunConfig{
					Assets: assets, Side: side, Client: c, FlowSchema: f.flowSchema, Self: self,
					Shape:   realapiserver.Shape{Nodes: f.nodes, PodsPerNode: f.podsPerNode, Toleration: f.toleration},
					Timeout: f.timeout, Quiet: 30 * time.Second, Log: os.Stderr,
					CPUWindow: b.window, IdleWindow: f.idleWindow, Settle: f.settle, Profile: profile, SideProfile: sideProfile,
				}, run, order)
				if err != nil {
					return fmt.Errorf("run %d, %s at qps %g: %w", run+1, side, b.qps, err)
				}
				if err := appendRaw(f.raw, res); err != nil {
					return err
				}
				results = append(results, res)
			}
		}
	}
	realapiserver.Report(os.Stdout, results)
	return nil
}

type budget struct {
	qps    float32
	burst  int
	window time.Duration
}

// parseBudgets reads "QPS/BURST[/WINDOW],...".
func parseBudgets(s string) ([]budget, error) {
	var out []budget
	for _, part := range strings.Split(s, ",") {
		f := strings.Split(part, "/")
		var b budget
		var errs []error
		if len(f) == 2 || len(f) == 3 {
			qps, err := strconv.ParseFloat(f[0], 32)
			b.qps, errs = float32(qps), append(errs, err)
			b.burst, err = strconv.Atoi(f[1])
			errs = append(errs, err)
			if len(f) == 3 {
				b.window, err = time.ParseDuration(f[2])
				errs = append(errs, err)
			}
		}
		if len(f) < 2 || len(f) > 3 || errors.Join(errs...) != nil || b.qps <= 0 || b.burst < 1 || b.window < 0 {
			return nil, fmt.Errorf("-budgets: %q: want QPS/BURST[/CPU-WINDOW], e.g. 50/100/90s", part)
		}
		out = append(out, b)
	}
	return out, nil
}

// rotate returns s rotated left by k.
func rotate[T any](s []T, k int) []T {
	k %= len(s)
	return append(append([]T(nil), s[k:]...), s[:k]...)
}

func load() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(raw))[0], 64)
	return v
}

// appendRaw appends v as a JSON line to path, if path is set.
func appendRaw(path string, v any) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(f).Encode(v); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readRaw reads the JSON lines of path.
func readRaw[T any](path string) ([]T, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}
