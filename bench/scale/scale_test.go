package scale

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/taintevict/taintevict/bench/realapiserver"
)

// TestSmallScale is the CI size of the scale run: 200 nodes × 30 pods (6,000) on a real
// kube-apiserver and etcd, kube-controller-manager and taintevict's command each in a
// process of its own. It asserts correctness only, from the audit log: in each run every
// due pod of zone a removed once and none before its deadline, no other pod written to,
// the start's out-of-service pods removed, nothing removed while the brake held, and no
// pod removed twice across a restart. No timing is asserted: the figures come from
// cmd/scale at full size (BENCHMARKS.md).
func TestSmallScale(t *testing.T) {
	crlog.SetLogger(logr.Discard())
	assets, err := realapiserver.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bins, err := BuildBinaries(ctx, filepath.Join("..", ".."), assets, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	shape := Shape{Nodes: 200, PodsPerNode: 30, Toleration: 5 * time.Second}
	saved, err := LoadOrBuild(ctx, assets, filepath.Join("..", realapiserver.FlowSchemaFile), filepath.Join(t.TempDir(), "cluster"), shape, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built %v in %.1f s", shape, saved.BuildSeconds)
	for _, tc := range []struct {
		side, variant string
	}{
		{"kube", VariantOutage},
		{"ours", VariantOutage},
		{"ours", VariantBrakeRestart},
	} {
		t.Run(strings.ReplaceAll(tc.side, "/", "-")+"-"+tc.variant, func(t *testing.T) {
			side, err := ParseSide(tc.side)
			if err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			res, err := Run(ctx, RunConfig{
				Saved: saved, Assets: assets, Bins: bins, Side: side, Variant: tc.variant, Budget: Budget{QPS: 1000, Burst: 2000},
				StartNodes: 2, Settle: time.Second, Quiet: 2 * time.Second, Hold: 10 * time.Second, Timeout: 3 * time.Minute,
				WhatIf: tc.variant == VariantOutage && !side.Kube, Log: &log,
			})
			t.Log(log.String())
			if err != nil {
				t.Fatal(err)
			}
			if got, want := res.Outage.Due, len(shape.Zone(0))*(shape.PodsPerNode-daemonsPerNode-1)-comeBackPods(tc.variant, shape); got != want {
				t.Errorf("due pods: got %d, want %d", got, want)
			}
			if !res.Complete {
				t.Errorf("not every due pod was removed: %d of %d", res.Outage.Removed, res.Outage.Due)
			}
			for _, p := range Problems([]Result{res}) {
				t.Error(p)
			}
		})
	}
}

// comeBackPods is how many of zone a's due pods are on the nodes that come back in a brake
// variant.
func comeBackPods(variant string, s Shape) int {
	if !strings.HasPrefix(variant, "brake") {
		return 0
	}
	return comeBack(len(s.Zone(0))) * (s.PodsPerNode - daemonsPerNode - 1)
}

// TestJudge reads a made-up audit log: the first successful removal of each due pod
// counts, a second one, one sent before its deadline and a write to a spared pod are
// reported, and another user's requests are not the side's.
func TestJudge(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	a, b, c, spared := podRef{"ns", "a"}, podRef{"ns", "b"}, podRef{"ns", "c"}, podRef{"ns", "s"}
	e := expect{users: map[string]bool{"side": true}, from: t0,
		due:    map[podRef]time.Time{a: at(1000), b: at(1000), c: at(1000)},
		spared: map[podRef]bool{spared: true}}
	rec := func(user, verb, sub string, p podRef, code, sent, done int) Record {
		return Record{User: user, Verb: verb, Resource: "pods", Subresource: sub, Namespace: p.Namespace, Name: p.Name, Code: code, Received: at(sent), Completed: at(done)}
	}
	recs := []Record{
		rec("side", "delete", "", a, 200, -10, -5), // before the phase
		rec("side", "patch", "status", a, 200, 1000, 1010),
		rec("side", "delete", "", a, 200, 1020, 1030),
		rec("side", "delete", "", b, 500, 1100, 1200), // failed: no removal
		rec("side", "delete", "", b, 200, 1300, 1400),
		rec("side", "delete", "", b, 200, 1500, 1600), // twice
		rec("other", "delete", "", c, 200, 1000, 1100),
		rec("side", "delete", "", c, 200, 900, 2000), // sent early
		rec("side", "patch", "status", spared, 200, 2100, 2200),
		rec("side", "get", "", spared, 200, 2300, 2400), // a read touches nothing
		{User: "side", Verb: "create", Resource: "events", Namespace: "ns", Code: 201, Completed: at(2500)},
	}
	o := judge(recs, e)
	got := [9]any{o.Removed, o.First, o.Half, o.Last, o.RemovedTwice, o.Early, o.TouchedSpared, o.Events, o.Errors[500]}
	want := [9]any{3, 1.03, 1.4, 2.0, 1, 1, 1, 1, 1}
	if got != want {
		t.Errorf("removed, first, half, last, twice, early, touched, events, 500s: got %v, want %v", got, want)
	}
	if o.correct() {
		t.Error("correct: got true for a run with a pod removed twice")
	}
	if got, want := o.removalRequests(), 8.0/3; got != want { // 8 pod requests from the phase on, the get included
		t.Errorf("removal requests per due pod: got %v, want %v", got, want)
	}
	evict := judge([]Record{rec("side", "create", "eviction", a, 201, 1000, 1100), rec("side", "delete", "", b, 200, 1000, 1100)}, expect{users: e.users, from: t0, due: e.due, evict: true})
	if evict.Removed != 1 {
		t.Errorf("evict mode: removed %d, want 1 (a DELETE is no eviction)", evict.Removed)
	}
}

// TestObjects: the pods of a node are of the three kinds in order, their names unique and
// their tolerations those their owners give.
func TestObjects(t *testing.T) {
	seen := map[podRef]bool{}
	for i := range 7 {
		for j := range 30 {
			ref := podOf(i, j)
			if seen[ref] {
				t.Fatalf("pod %v twice", ref)
			}
			seen[ref] = true
			p := newPod(i, j)
			if p.Namespace != ref.Namespace || p.Name != ref.Name || p.Spec.NodeName != nodeName(i) {
				t.Errorf("pod %v: got %s/%s on %s", ref, p.Namespace, p.Name, p.Spec.NodeName)
			}
			wantTolerations := map[int]int{kindDaemon: 6, kindStateful: 2, kindReplica: 0}[kind(j)]
			if got := len(p.Spec.Tolerations); got != wantTolerations {
				t.Errorf("pod %v of kind %d: %d tolerations, want %d", ref, kind(j), got, wantTolerations)
			}
		}
	}
	if got, want := newNode(4, time.Now()).Labels["topology.kubernetes.io/zone"], "b"; got != want {
		t.Errorf("node 4's zone: got %q, want %q", got, want)
	}
	if got, want := len(Shape{Nodes: 10}.Zone(0)), 4; got != want {
		t.Errorf("zone a of 10 nodes: got %d nodes, want %d", got, want)
	}
	if _, err := os.Stat(filepath.Join("..", realapiserver.FlowSchemaFile)); err != nil {
		t.Errorf("taintevict's FlowSchema: %v", err)
	}
}

// TestReport: the tables carry kube's last removal over each side's, measured from the
// deadline, what went wrong in a run, and every row has as many cells as its header.
func TestReport(t *testing.T) {
	res := func(side string, run int, last float64) Result {
		return Result{Side: side, Variant: VariantOutage, Budget: Budget{1000, 2000}, Shape: Shape{Nodes: 334, PodsPerNode: 30, Toleration: 30 * time.Second},
			Run: run, StartCorrect: true, Deadline: 29.5, Ready: 1, Decision: 1.2,
			Outage: outcome{Due: 3000, Removed: 3000, First: 30, Half: 31, Last: 29.5 + last, Requests: map[string]int{"delete pods": 3000, "patch pods/status": 3000}}}
	}
	rs := []Result{res("kube", 0, 6), res("ours", 0, 3), res("kube", 1, 8), res("ours", 1, 4), res("flood", 0, 2.5), {Side: "kube/alone", Variant: VariantOutage, Budget: Budget{1000, 2000}, Shape: Shape{Nodes: 334, PodsPerNode: 30, Toleration: 30 * time.Second}, StartCorrect: true}}
	rs[3].Outage.RemovedTwice = 2
	var b strings.Builder
	Report(&b, rs)
	out := b.String()
	for _, want := range []string{
		"#### outage: 334 nodes × 30 pods (10020 pods), qps 1000, burst 2000; zone a: 3000 due",
		"/ 7.00 (6.00–8.00) | – |", // kube's last, after the deadline
		"/ 3.50 (3.00–4.00) | 2.00x |",
		"delete pods 1.00, patch pods/status 1.00",
		"run 2: 2 removed twice",
		"removed 15 s past the deadline",
		"| the flood, delete requests | 1 |",
		"| taintevict | last removal after the deadline ÷ the flood's in the same mode: 1.40 | the flood's 2.50 s, 1 runs |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("got\n%s\nwant it to contain %q", out, want)
		}
	}
	cells := 0
	for line := range strings.Lines(out) {
		switch {
		case strings.HasPrefix(line, "| side |"):
			cells = strings.Count(line, "|")
		case strings.HasPrefix(line, "| ") && cells > 0 && !strings.Contains(line, "control plane") && strings.Count(line, "|") != cells:
			t.Errorf("row %q: got %d bars, want %d as its header", line, strings.Count(line, "|"), cells)
		}
		if strings.TrimSpace(line) == "" {
			cells = 0
		}
	}
}

// TestParseSide reads every side and writes it back as it was read.
func TestParseSide(t *testing.T) {
	for _, s := range []string{"kube", "kube/alone", "ours", "ours/mode=evict", "flood", "flood/mode=evict"} {
		t.Run(strings.ReplaceAll(s, "/", "-"), func(t *testing.T) {
			side, err := ParseSide(s)
			if err != nil {
				t.Fatal(err)
			}
			if got := side.String(); got != s {
				t.Errorf("ParseSide(%q).String(): got %q, want %q", s, got, s)
			}
			if got, want := side.Flood, strings.HasPrefix(s, "flood"); got != want {
				t.Errorf("ParseSide(%q).Flood: got %v, want %v", s, got, want)
			}
		})
	}
	if _, err := ParseSide("flood/mode=drain"); err == nil {
		t.Error("ParseSide(\"flood/mode=drain\"): got no error, want one")
	}
}
