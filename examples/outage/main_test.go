package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// runOutage runs the simulation and returns its output.
func runOutage(t *testing.T) string {
	t.Helper()
	var out strings.Builder
	began := time.Now()
	if err := run(&out); err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
	}
	t.Logf("run took %v", time.Since(began))
	return out.String()
}

// timeline returns the timeline's decision lines as [time, verb, pod, rest...].
func timeline(out string) [][]string {
	var lines [][]string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && strings.HasPrefix(f[0], "+") && f[1] != "*" {
			lines = append(lines, f)
		}
	}
	return lines
}

// find returns the timeline lines about pod with verb.
func find(lines [][]string, verb, pod string) [][]string {
	var out [][]string
	for _, f := range lines {
		if f[1] == verb && f[2] == pod {
			out = append(out, f)
		}
	}
	return out
}

// scenarioOutput returns the output of scenario i (0 for the outage, 1 for the partition).
func scenarioOutput(t *testing.T, out string, i int) string {
	t.Helper()
	parts := strings.Split(out, "\n"+strings.Repeat("-", 90)+"\n")
	if len(parts) != len(scenarios) {
		t.Fatalf("output has %d scenarios, want %d:\n%s", len(parts), len(scenarios), out)
	}
	return parts[i]
}

func TestOutage(t *testing.T) {
	defer goleak.VerifyNone(t)

	all := runOutage(t)
	if again := runOutage(t); again != all {
		t.Fatalf("two runs printed different output:\n--- first\n%s\n--- second\n%s", all, again)
	}
	out := scenarioOutput(t, all, 0)
	lines := timeline(out)

	// evictedAt checks that pod was evicted exactly once, at the given time.
	evictedAt := func(pod, at string) {
		t.Helper()
		got := find(lines, "evicted", pod)
		if len(got) != 1 || got[0][0] != at {
			t.Errorf("%s: evicted %v, want once at %s", pod, got, at)
		}
	}
	// never checks that pod was never evicted.
	never := func(pod string) {
		t.Helper()
		if got := find(lines, "evicted", pod); len(got) != 0 {
			t.Errorf("%s: evicted %v, want never", pod, got)
		}
	}

	// zone-a: no toleration, or a toleration of another key: evicted at once.
	evictedAt("shop/web-1", "+00:00")
	evictedAt("batch/train-1", "+00:00")
	evictedAt("shop/web-2", "+00:00")
	// Tolerations of 60 s and 300 s: evicted when they run out.
	evictedAt("shop/api-1", "+01:00")
	evictedAt("shop/cart-1", "+05:00")
	if got := find(lines, "scheduled", "shop/api-1"); len(got) != 1 || got[0][0] != "+00:00" || got[0][len(got[0])-1] != "+01:00" {
		t.Errorf("shop/api-1: scheduled %v, want once at +00:00 for +01:00", got)
	}

	// node-a3 came back at +02:00: its pending evictions are cancelled, and its pods stay.
	for _, pod := range []string{"shop/queue-1", "shop/cart-2"} {
		got := find(lines, "cancelled", pod)
		if len(got) != 1 || got[0][0] != "+02:00" || got[0][len(got[0])-1] != "NotTainted" {
			t.Errorf("%s: cancelled %v, want once at +02:00 with NotTainted", pod, got)
		}
		never(pod)
	}

	// Pods that tolerate the taint forever are never scheduled nor evicted.
	for _, pod := range []string{"logging/agent-a1", "logging/agent-a2", "logging/agent-a3"} {
		if got := find(lines, "scheduled", pod); len(got) != 0 {
			t.Errorf("%s: scheduled %v, want never", pod, got)
		}
		if got := find(lines, "kept", pod); len(got) != 1 || got[0][0] != "+00:00" {
			t.Errorf("%s: kept %v, want once at +00:00", pod, got)
		}
		never(pod)
	}

	// A pod that had finished is skipped, not deleted.
	if got := find(lines, "skipped", "batch/report-1"); len(got) != 1 || got[0][len(got[0])-1] != "PodFinished" {
		t.Errorf("batch/report-1: skipped %v, want once with PodFinished", got)
	}
	never("batch/report-1")

	// zone-b is untouched: none of its pods appears in the timeline.
	for _, f := range lines {
		if slices.ContainsFunc(f, func(s string) bool { return strings.Contains(s, "node-b") }) {
			t.Errorf("zone-b in the timeline: %v", f)
		}
	}

	// The summary counts, and the schedule left after the recovery.
	for _, want := range []string{
		"evicted (5):",
		"still running (11):",
		"finished before the outage, left alone (1):",
		"+02:00    pending:   shop/cart-1 at +05:00\n",
		"+00:00    pending:   shop/api-1 at +01:00, shop/queue-1 at +03:00, shop/cart-1 at +05:00, shop/cart-2 at +05:00\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// TestPartition checks the second scenario: the brake holds zone-a's evictions while its
// three nodes are cut off, zone-b's go on, and when two nodes come back the brake releases
// what fell due on the third; nothing is evicted twice.
func TestPartition(t *testing.T) {
	defer goleak.VerifyNone(t)

	out := scenarioOutput(t, runOutage(t), 1)
	lines := timeline(out)
	once := func(verb, pod, at, last string) {
		t.Helper()
		got := find(lines, verb, pod)
		if len(got) != 1 || got[0][0] != at || got[0][len(got[0])-1] != last {
			t.Errorf("%s %s: %v, want once at %s ending %q", verb, pod, got, at, last)
		}
	}
	// Due while zone-a is cut off: held, reported once.
	once("delayed", "shop/api-1", "+01:00", "Paused")
	once("delayed", "shop/queue-1", "+03:00", "Paused")
	// zone-b has 1 of 2 nodes down, not more than half: evicted on time.
	once("evicted", "shop/api-2", "+01:30", "node-b1")
	once("evicted", "shop/web-3", "+05:30", "node-b1")
	// node-a1 and node-a2 come back: their pods stay; node-a3's held eviction goes.
	for _, pod := range []string{"shop/web-1", "shop/api-1", "shop/cart-1"} {
		once("cancelled", pod, "+04:00", "NotTainted")
		if got := find(lines, "evicted", pod); len(got) != 0 {
			t.Errorf("%s: evicted %v, want never", pod, got)
		}
	}
	once("evicted", "shop/queue-1", "+04:00", "node-a3")
	once("evicted", "shop/web-2", "+05:00", "node-a3")
	for _, want := range []string{
		"+03:00    pending:   shop/api-1 at +01:00 (Paused), shop/queue-1 at +03:00 (Paused),",
		"evicted (4):",
		"still running (9):",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// onceAt checks that lines hold exactly one line of verb about pod, at at, ending last.
func onceAt(t *testing.T, lines [][]string, verb, pod, at, last string) {
	t.Helper()
	got := find(lines, verb, pod)
	if len(got) != 1 || got[0][0] != at || got[0][len(got[0])-1] != last {
		t.Errorf("%s %s: %v, want once at %s ending %q", verb, pod, got, at, last)
	}
}

// TestCaps checks the third scenario: at most 2 evictions in flight, a pod counting until
// its 30 s of termination are over, and at most 2 a minute of namespace shop.
func TestCaps(t *testing.T) {
	out := scenarioOutput(t, runOutage(t), 2)
	lines := timeline(out)
	for _, e := range []struct{ pod, at, node string }{
		{"shop/web-1", "+00:00", "node-a1"}, {"shop/web-2", "+00:10", "node-a1"}, // 2 in flight
		{"batch/job-1", "+00:30", "node-a3"}, {"batch/job-2", "+00:40", "node-a3"}, // as web-1 and web-2 go
		{"shop/web-3", "+01:00", "node-a2"}, {"shop/web-4", "+01:10", "node-a2"}, // shop's window, then a pod gone each
	} {
		onceAt(t, lines, "evicted", e.pod, e.at, e.node)
	}
	onceAt(t, lines, "delayed", "batch/job-1", "+00:10", "InFlight")
	if got := find(lines, "delayed", "shop/web-3"); len(got) != 3 || got[1][len(got[1])-1] != "NamespaceLimit" {
		t.Errorf("shop/web-3: delayed %v, want InFlight, then NamespaceLimit, then InFlight", got)
	}
	// Never more than 2 in flight: each eviction follows a pod gone once 2 are out.
	inFlight, most := 0, 0
	for _, f := range lines {
		switch f[1] {
		case "evicted":
			inFlight++
		case "gone":
			inFlight--
		}
		most = max(most, inFlight)
	}
	if most != 2 {
		t.Errorf("at most %d pods in flight, want 2", most)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// TestSmallZone checks the fourth scenario: the brake's floor holds zone-a at 2 of its 3
// nodes; when all 3 are down, it goes at its own rate, one every 30 s.
func TestSmallZone(t *testing.T) {
	out := scenarioOutput(t, runOutage(t), 3)
	lines := timeline(out)
	onceAt(t, lines, "evicted", "shop/web-1", "+00:00", "node-a1")
	onceAt(t, lines, "delayed", "shop/web-2", "+01:00", "Paused")
	onceAt(t, lines, "evicted", "shop/web-2", "+02:00", "node-a2")
	onceAt(t, lines, "evicted", "shop/web-3", "+02:30", "node-a3")
	onceAt(t, lines, "evicted", "shop/queue-1", "+03:00", "node-a3")
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// TestConfirmHold checks the last scenario: a taint on every node that would evict most
// pods is held until an operator confirms it on a node (that node's pods go), or until it
// would evict few enough; a DaemonSet pod put back on the node confirmed waits 30 s, then
// 60 s, after the last eviction.
func TestConfirmHold(t *testing.T) {
	out := scenarioOutput(t, runOutage(t), 4)
	lines := timeline(out)
	for _, pod := range []string{"shop/web-1", "logging/agent-a1", "shop/web-2", "logging/agent-a2", "shop/web-3", "logging/agent-b1"} {
		onceAt(t, lines, "delayed", pod, "+01:00", "Unconfirmed")
	}
	onceAt(t, lines, "evicted", "shop/web-3", "+02:00", "node-b1")
	onceAt(t, lines, "evicted", "logging/agent-b1", "+02:00", "node-b1")
	onceAt(t, lines, "delayed", "logging/agent-x1", "+02:10", "Recreated")
	onceAt(t, lines, "evicted", "logging/agent-x1", "+02:30", "node-b1")
	onceAt(t, lines, "evicted", "logging/agent-x2", "+03:30", "node-b1")
	onceAt(t, lines, "evicted", "shop/web-1", "+04:00", "node-a1")
	onceAt(t, lines, "cancelled", "shop/web-2", "+04:00", "NotTainted")
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// TestOutageRepeated runs the simulation many times: the output must never change.
func TestOutageRepeated(t *testing.T) {
	n := 50
	if testing.Short() {
		n = 5
	}
	want := runOutage(t)
	for i := range n {
		var out strings.Builder
		if err := run(&out); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if out.String() != want {
			t.Fatalf("run %d printed different output:\n%s\nwant:\n%s", i, out.String(), want)
		}
	}
}

// TestOutageGolden compares the whole output with testdata/output.golden, so that a change
// of the simulation's code cannot change what it prints unnoticed. After a deliberate
// change of the output: go run . > testdata/output.golden
func TestOutageGolden(t *testing.T) {
	want, err := os.ReadFile("testdata/output.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got := runOutage(t); got != string(want) {
		t.Errorf("output differs from testdata/output.golden:\n%s", got)
	}
}
