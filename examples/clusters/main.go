package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "clusters:", err)
		os.Exit(1)
	}
}

const (
	unreachable = "cluster.example.com/unreachable"
	tick        = 10 * time.Second
	end         = 5 * time.Minute
)

var (
	start = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	// orderOf is each workload's place in placements, the order of the output.
	orderOf = map[types.NamespacedName]int{}
)

// placement is a workload of the simulation: where it starts, what it tolerates, and the
// application it belongs to ("" for none).
type placement struct {
	name, cluster, about string
	seconds              *int64 // of its toleration of unreachable; nil with forever false: none
	forever              bool
	app                  string
}

func secs(s int64) *int64 { return &s }

var (
	regions = []struct{ cluster, region string }{{"us-east-1", "us"}, {"us-east-2", "us"}, {"eu-west-1", "eu"}}
	// placements are in the order of the output.
	placements = []placement{
		{"shop/web", "us-east-1", "no tolerations; application storefront", nil, false, "storefront"},
		{"shop/api", "us-east-1", "unreachable for 60s", secs(60), false, ""},
		{"shop/db", "us-east-1", "unreachable for 300s", secs(300), false, ""},
		{"logging/agent", "us-east-1", "unreachable forever", nil, true, ""},
		{"shop/cart", "us-east-2", "unreachable for 10s; application storefront", secs(10), false, "storefront"},
	}
	// script is what happens to the clusters, and when.
	script = []struct {
		at      time.Duration
		what    string
		cluster string
		tainted bool
	}{
		{0, "us-east-1 loses contact: tainted " + unreachable + ":NoExecute", "us-east-1", true},
		{2 * time.Minute, "us-east-2 loses contact too: its workloads go to eu-west-1", "us-east-2", true},
		{3 * time.Minute, "us-east-1 is back: its taint is removed; the workloads still on it stay", "us-east-1", false},
	}
)

// run simulates the script and writes its timeline to w; also tells the engine's reports
// (tests check them).
func run(w io.Writer, also ...engine.Observer) error {
	clk := testclock.NewFakeClock(start)
	f := &fleet{workloads: map[types.NamespacedName]*workload{}}
	for _, r := range regions {
		f.clusters = append(f.clusters, &cluster{name: r.cluster, region: r.region})
	}
	for i, p := range placements {
		ns, name, _ := strings.Cut(p.name, "/")
		wl := &workload{key: types.NamespacedName{Namespace: ns, Name: name}, uid: types.UID(p.name + "-1"), cluster: p.cluster}
		if p.app != "" {
			wl.owner = engine.Owner{Kind: "Application", Name: p.app}
		}
		if p.seconds != nil || p.forever {
			wl.tolerations = []v1.Toleration{{Key: unreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: p.seconds}}
		}
		f.workloads[wl.key], orderOf[wl.key] = wl, i
	}
	var mu sync.Mutex // guards moves, which the mover adds to from the act workers
	var moves []line
	obs := &evictiontest.Observer{}
	m := &mover{f: f, moves: func(w types.NamespacedName, from, to string) {
		mu.Lock()
		defer mu.Unlock()
		moves = append(moves, line{orderOf[w], 1, fmt.Sprintf("%-9s  %-13s  %s -> %s", "moved", w, from, to)})
	}}
	// An application's workloads move one a minute (Options.OwnerLimit): a region that goes
	// down does not take all of an application's replicas through a move at once.
	e, err := engine.New(m, f, engine.Options{Clock: clk, Observer: append(engine.Observers{obs}, also...),
		OwnerLimit: engine.Window{Max: 1, Per: time.Minute}})
	if err != nil {
		return err
	}
	m.e = e
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for _, c := range f.clusters {
		e.HolderUpdated(engine.Holder{Name: c.name, Group: c.region})
	}
	for _, wl := range f.workloads {
		e.TargetUpdated(wl)
	}

	fmt.Fprintf(w, "Workloads on clusters, simulated: %d clusters in 2 regions, %d workloads, one engine.Engine; an application's workloads move one a minute.\n", len(f.clusters), len(placements))
	fmt.Fprintf(w, "The clock is fake and moves %v at a time; the output is the same on every run.\n\n", tick)
	fmt.Fprintf(w, "Workloads, and what they tolerate of %s:NoExecute:\n", unreachable)
	for _, p := range placements {
		fmt.Fprintf(w, "  %-9s  %-13s  %s\n", p.cluster, p.name, p.about)
	}
	fmt.Fprintf(w, "\nTimeline (time since the outage began):\n")
	// Each tick: the clock moves, and what falls due is done; then the script's changes at
	// that time are made, and what they cause is done. Both are waited for, so that the
	// order never depends on the goroutines.
	step := func(at time.Duration) error {
		if err := e.WaitIdle(ctx); err != nil {
			return err
		}
		mu.Lock()
		printStep(w, at, obs.Events(), moves)
		obs.Reset()
		moves = nil
		mu.Unlock()
		return nil
	}
	for at := time.Duration(0); at <= end; at += tick {
		clk.SetTime(start.Add(at))
		if err := step(at); err != nil {
			return err
		}
		for _, s := range script {
			if s.at != at {
				continue
			}
			var taints []v1.Taint
			if s.tainted {
				taints = []v1.Taint{{Key: unreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: clk.Now()}}}
			}
			fmt.Fprintf(w, "%s  * %s\n", since(at), s.what)
			e.HolderUpdated(f.setTaints(s.cluster, taints))
			if err := step(at); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(w, "\nWhere the workloads run at %s:\n", since(end))
	for _, c := range f.clusters {
		var on []string
		for _, p := range placements {
			ns, name, _ := strings.Cut(p.name, "/")
			if f.workloads[types.NamespacedName{Namespace: ns, Name: name}].cluster == c.name {
				on = append(on, p.name)
			}
		}
		if len(on) == 0 {
			on = []string{"(none)"}
		}
		fmt.Fprintf(w, "  %-9s  %s\n", c.name, strings.Join(on, ", "))
	}
	return nil
}

// line is one line of a step's output, and where it goes: by workload, in the order of
// placements, then by kind. The engine decides on several goroutines, in an order that
// changes from run to run.
type line struct {
	workload, kind int
	text           string
}

// printStep writes what the engine decided at one tick, and the moves made.
func printStep(w io.Writer, at time.Duration, events []evictiontest.Event, moves []line) {
	lines := moves
	for _, e := range events {
		key := types.NamespacedName{Namespace: e.Pod.Namespace, Name: e.Pod.Name}
		var verb, detail string
		switch e.Kind {
		case evictiontest.Scheduled:
			verb, detail = "scheduled", "on "+e.Pod.Holder+", move at "+since(e.At.Sub(start))
		case evictiontest.Cancelled:
			verb, detail = "cancelled", "on "+e.Pod.Holder+": "+string(e.Reason)
		case evictiontest.Failed:
			verb, detail = "failed", e.Err.Error()
		case evictiontest.Delayed:
			verb, detail = "delayed", "on "+e.Pod.Holder+": "+string(e.Reason)
		default:
			continue // Started, and Succeeded: the move says it
		}
		lines = append(lines, line{orderOf[key], 0, fmt.Sprintf("%-9s  %-13s  %s", verb, key, detail)})
	}
	slices.SortStableFunc(lines, func(a, b line) int { return cmp.Or(cmp.Compare(a.workload, b.workload), cmp.Compare(a.kind, b.kind)) })
	for _, l := range lines {
		fmt.Fprintf(w, "%s    %s\n", since(at), l.text)
	}
}

// since formats d as +mm:ss.
func since(d time.Duration) string {
	return fmt.Sprintf("+%02d:%02d", int(d/time.Minute), int(d%time.Minute/time.Second))
}
