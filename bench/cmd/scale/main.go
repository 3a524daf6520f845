// Command scale runs kube-controller-manager's taint-eviction-controller and taintevict's
// command side by side on a real kube-apiserver and etcd at Kubernetes' supported maximum
// (package scale): each size's cluster built once and saved, every run on a fresh copy of
// it, the API server's audit log the judge. It prints the Markdown tables of BENCHMARKS.md:
//
//	go run ./cmd/scale -nodes 334,1000,2000 -runs 3 -raw /tmp/scale.jsonl
//
// Run it from bench/, after `bash hack/kube-assets.sh` (from the repository's root), which
// builds kube-apiserver and kube-controller-manager; it builds taintevict's command and
// plugin from this checkout. With -report it runs nothing and prints the tables of the
// results an earlier run appended to -raw; with -informers it measures the informer
// caches' memory per pod and per node instead (see scale.MeasureInformers).
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
	"github.com/taintevict/taintevict/bench/scale"
)

func main() {
	crlog.SetLogger(logr.Discard())
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "-informer-child":
		err = scale.InformerChild(os.Args[2:], os.Stdout)
	case len(os.Args) > 1 && os.Args[1] == "-flood-child":
		err = scale.FloodChild(os.Args[2:])
	default:
		err = drive(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

type flags struct {
	nodes, budgets, sides, variants string
	podsPerNode, runs, startNodes   int
	toleration, settle, quiet, hold time.Duration
	timeout                         time.Duration
	clusters, raw, profile          string
	report, whatIf, informers       bool
}

func drive(args []string) error {
	var f flags
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.StringVar(&f.nodes, "nodes", "334,1000", "cluster sizes in nodes, comma-separated (5000 is kube's supported maximum)")
	fs.IntVar(&f.podsPerNode, "pods-per-node", 30, "pods on each node (30 × 5,000 = 150,000)")
	fs.DurationVar(&f.toleration, "toleration", 30*time.Second, "the API server's --default-unreachable-toleration-seconds (kube's 300 s shortened)")
	fs.StringVar(&f.budgets, "budgets", "1000/2000", "client budgets QPS/BURST, comma-separated; 20/30 is kube-controller-manager's default")
	fs.StringVar(&f.sides, "sides", "kube ours ours/mode=evict", "the sides, space-separated: kube, kube/alone, ours, ours/mode=evict, flood, flood/mode=evict (the flood: the API server's capacity, see scale.FloodChild)")
	fs.StringVar(&f.variants, "variants", scale.VariantOutage, "outage variants, comma-separated: outage, brake, restart, failover, brake-restart (brake ones: taintevict only)")
	fs.IntVar(&f.runs, "runs", 3, "runs of each side (their order rotates from run to run)")
	fs.IntVar(&f.startNodes, "start-nodes", 2, "nodes tainted out-of-service before a side starts, for its first decision")
	fs.DurationVar(&f.settle, "settle", 10*time.Second, "wait after the start's removals before the quiet window")
	fs.DurationVar(&f.quiet, "quiet", time.Minute, "the quiet window of the steady state")
	fs.DurationVar(&f.hold, "hold", 30*time.Second, "how long the brake holds before nodes come back")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Hour, "the longest wait for a phase's removals")
	cache, _ := os.UserCacheDir()
	fs.StringVar(&f.clusters, "clusters", filepath.Join(cache, "taintevict", "scale-clusters"), "where the built clusters are kept, one folder per size")
	fs.StringVar(&f.raw, "raw", "", "append each result as a JSON line to this file")
	fs.BoolVar(&f.report, "report", false, "run nothing: print the tables of the results in -raw")
	fs.BoolVar(&f.whatIf, "what-if", true, "time `kubectl taintevict what-if -l topology.kubernetes.io/zone=a` in taintevict's runs")
	fs.StringVar(&f.profile, "profile", "", "write CPU profiles of the what-if (the plugin's and kube-apiserver's) to this folder")
	fs.BoolVar(&f.informers, "informers", false, "measure the informer caches' memory per pod and per node instead")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.report {
		rs, err := readRaw(f.raw)
		scale.Report(os.Stdout, rs)
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	assets, err := realapiserver.AssetsDir()
	if err != nil {
		return err
	}
	var sizes []int
	for _, s := range strings.Split(f.nodes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 3 {
			return fmt.Errorf("-nodes: %q: want a whole number, at least 3", s)
		}
		sizes = append(sizes, n)
	}
	saved := func(n int) (*scale.Saved, error) {
		shape := scale.Shape{Nodes: n, PodsPerNode: f.podsPerNode, Toleration: f.toleration}
		dir := filepath.Join(f.clusters, fmt.Sprintf("%dx%d-%s", n, f.podsPerNode, f.toleration))
		fmt.Fprintf(os.Stderr, "cluster %v: %s (load %.1f)\n", shape, dir, load())
		return scale.LoadOrBuild(ctx, assets, realapiserver.FlowSchemaFile, dir, shape, os.Stderr)
	}
	if f.informers {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		var rs []scale.InformerResult
		for _, n := range sizes {
			s, err := saved(n)
			if err != nil {
				return err
			}
			more, err := scale.MeasureInformers(ctx, s, assets, self, os.Stderr)
			rs = append(rs, more...)
			if err != nil {
				return err
			}
		}
		scale.InformerReport(os.Stdout, rs)
		return nil
	}
	return runAll(ctx, f, assets, sizes, saved)
}

func runAll(ctx context.Context, f flags, assets string, sizes []int, saved func(int) (*scale.Saved, error)) error {
	budgets, err := parseBudgets(f.budgets)
	if err != nil {
		return err
	}
	var sides []scale.Side
	for _, s := range strings.Fields(f.sides) {
		side, err := scale.ParseSide(s)
		if err != nil {
			return err
		}
		sides = append(sides, side)
	}
	binDir, err := os.MkdirTemp("", "scale-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	bins, err := scale.BuildBinaries(ctx, "..", assets, binDir)
	if err != nil {
		return err
	}
	if bins.Flood, err = os.Executable(); err != nil {
		return err
	}
	var results []scale.Result
	for _, n := range sizes {
		s, err := saved(n)
		if err != nil {
			return err
		}
		for run := range f.runs {
			for _, b := range budgets {
				for _, v := range strings.Split(f.variants, ",") {
					for k := range sides {
						side := sides[(k+run)%len(sides)]
						if side.Kube && strings.HasPrefix(v, "brake") || side.Flood && v != scale.VariantOutage {
							continue // kube's controller has no brake; the flood plays the outage only
						}
						fmt.Fprintf(os.Stderr, "%d nodes, run %d, %s, %s, %s (load %.1f)\n", n, run+1, b, v, side, load())
						res, err := scale.Run(ctx, scale.RunConfig{
							Saved: s, Assets: assets, Bins: bins, Side: side, Variant: v, Budget: b,
							StartNodes: f.startNodes, Settle: f.settle, Quiet: f.quiet, Hold: f.hold, Timeout: f.timeout,
							WhatIf: f.whatIf && v == scale.VariantOutage, ProfileDir: f.profile, Run: run, Log: os.Stderr,
						})
						if err != nil {
							return fmt.Errorf("%d nodes, run %d, %s, %s: %w", n, run+1, v, side, err)
						}
						if err := appendRaw(f.raw, res); err != nil {
							return err
						}
						results = append(results, res)
					}
				}
			}
		}
	}
	scale.Report(os.Stdout, results)
	return nil
}

// parseBudgets reads "QPS/BURST,...".
func parseBudgets(s string) ([]scale.Budget, error) {
	var out []scale.Budget
	for _, part := range strings.Split(s, ",") {
		q, b, ok := strings.Cut(part, "/")
		qps, err1 := strconv.ParseFloat(q, 64)
		burst, err2 := strconv.Atoi(b)
		if !ok || errors.Join(err1, err2) != nil || qps <= 0 || burst < 1 {
			return nil, fmt.Errorf("-budgets: %q: want QPS/BURST, e.g. 20/30", part)
		}
		out = append(out, scale.Budget{QPS: qps, Burst: burst})
	}
	return out, nil
}

func load() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(raw))[0], 64)
	return v
}

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

func readRaw(path string) ([]scale.Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []scale.Result
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var r scale.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
