package realapiserver

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/taintevict/taintevict/clientgo"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// TestMeasure reads a made-up audit log: the times count from the first taint's
// completion, the side's first successful removal of each untolerating pod counts, a second
// one and a write to a tolerating pod are reported, and another user's requests are not the
// side's.
func TestMeasure(t *testing.T) {
	c := &Cluster{Tolerating: map[string]bool{"t1": true}, Untolerating: map[string]bool{"u1": true, "u2": true, "u3": true}}
	const side = "system:serviceaccount:taintevict-system:taintevict-controller"
	rec := func(user, verb, resource, sub, name string, code, ms int) Record {
		return Record{User: user, Verb: verb, Resource: resource, Subresource: sub, Namespace: Namespace, Name: name, Code: code, Completed: at(ms)}
	}
	node := func(ms int) Record {
		return Record{User: "admin", Verb: "patch", Resource: "nodes", Name: "n", Code: 200, Completed: at(ms)}
	}
	recs := []Record{
		rec(side, "list", "pods", "", "", 200, -5000), // before the taint: not counted
		node(1000), node(1200),
		rec(side, "patch", "pods", "status", "u1", 200, 1100),
		rec(side, "delete", "pods", "", "u1", 200, 1150),
		rec(side, "create", "events", "", "u1.1", 201, 1300),
		rec(side, "delete", "pods", "", "u2", 500, 1400), // failed: no removal
		rec(side, "delete", "pods", "", "u2", 200, 1600),
		rec(side, "delete", "pods", "", "u1", 200, 1700), // twice
		rec("someone", "delete", "pods", "", "u3", 200, 1800),
		rec(side, "delete", "pods", "", "u3", 200, 3000),
		rec(side, "patch", "pods", "status", "t1", 200, 3100),
		rec(side, "create", "events", "", "u2.1", 201, 3500),
	}
	got := Measure(recs, Judge{Cluster: c, User: side})
	want := Measurement{
		Evictions: 3, Removed: 3, First: 0.15, Half: 0.6, Last: 2, Tainted: 0.2,
		RemovedTwice: 1, TouchedTolerating: 1,
		Requests: map[string]int{"patch pods/status": 2, "delete pods": 5, "create events": 2},
		Errors:   map[int]int{500: 1}, Events: 2, EventsBeforeLast: 1, LastEvent: 2.5,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}

	evict := Measure([]Record{node(0), rec(side, "create", "pods", "eviction", "u1", 201, 500), rec(side, "delete", "pods", "", "u2", 200, 600)},
		Judge{Cluster: c, User: side, Evict: true})
	if got, want := [2]any{evict.Removed, evict.Last}, [2]any{1, 0.5}; got != want {
		t.Errorf("evict mode: removed, last: got %v, want %v (a DELETE is no eviction)", got, want)
	}

	none := Measure(recs[:1], Judge{Cluster: c, User: side})
	if none.First != -1 || none.Last != -1 || none.Removed != 0 {
		t.Errorf("before any taint: got %+v, want nothing measured", none)
	}
}

// TestAuditReader reads a log written in pieces: a line cut in two is read once whole.
func TestAuditReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	r := NewAuditReader(path)
	if recs, err := r.Read(); err != nil || len(recs) != 0 {
		t.Fatalf("no log yet: got %v, %v, want nothing", recs, err)
	}
	line := `{"user":{"username":"u"},"verb":"delete","userAgent":"ua","objectRef":{"resource":"pods","namespace":"outage","name":"p"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-12-01T12:00:00.000000Z","stageTimestamp":"2026-12-01T12:00:00.250000Z"}` + "\n"
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	write(line + line[:40])
	recs, err := r.Read()
	if err != nil || len(recs) != 1 {
		t.Fatalf("got %v, %v, want 1 record", recs, err)
	}
	want := Record{Verb: "delete", User: "u", UserAgent: "ua", Resource: "pods", Namespace: "outage", Name: "p", Code: 200, Received: t0, Completed: t0.Add(250 * time.Millisecond)}
	if !reflect.DeepEqual(recs[0], want) {
		t.Errorf("got %+v, want %+v", recs[0], want)
	}
	write(line[40:])
	if recs, err = r.Read(); err != nil || len(recs) != 1 || recs[0] != want {
		t.Errorf("the rest of the cut line: got %v, %v, want %v", recs, err, want)
	}
	// A line cut at its start is read again: once it reads whole, nothing is lost.
	if err := os.WriteFile(path, []byte(line+line+line[60:]+line), 0o600); err != nil {
		t.Fatal(err)
	}
	if recs, err = r.Read(); err != nil || len(recs) != 0 {
		t.Errorf("a cut line: got %v, %v, want nothing yet", recs, err)
	}
	if err := os.WriteFile(path, []byte(line+line+line+line), 0o600); err != nil {
		t.Fatal(err)
	}
	if recs, err = r.Read(); err != nil || len(recs) != 2 {
		t.Errorf("the cut line read whole: got %v, %v, want its record and the next", recs, err)
	}
	write("{not json\n")
	for i := 1; i < auditRereads; i++ {
		if recs, err := r.Read(); err != nil || len(recs) != 0 {
			t.Fatalf("a bad line, read %d: got %v, %v, want nothing yet", i, recs, err)
		}
	}
	if _, err := r.Read(); err == nil || !strings.HasPrefix(err.Error(), "realapiserver: ") {
		t.Errorf("a bad line that stays: got %v, want a realapiserver error", err)
	}
}

func TestParseSide(t *testing.T) {
	for _, tc := range []struct {
		in, canonical string
		want          Side
	}{
		{"kube", "kube", Side{Kube: true}},
		{"ours", "ours", Side{Mode: clientgo.ModeDelete}},
		{"ours/mode=delete", "ours", Side{Mode: clientgo.ModeDelete}},
		{"ours/delete-workers=64/mode=evict", "ours/mode=evict/delete-workers=64", Side{Mode: clientgo.ModeEvict, DeleteWorkers: 64}},
		{"flood", "flood", Side{Flood: true, Mode: clientgo.ModeDelete}},
		{"flood/inflight=128/mode=evict", "flood/mode=evict/inflight=128", Side{Flood: true, Mode: clientgo.ModeEvict, Inflight: 128}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSide(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v, want %+v", got, err, tc.want)
			}
			if got.String() != tc.canonical {
				t.Errorf("String: got %q, want %q", got.String(), tc.canonical)
			}
		})
	}
	for _, bad := range []string{"", "kube/mode=evict", "theirs", "ours/mode=dry-run", "ours/delete-workers=0", "ours/workers=3", "ours/inflight=8", "flood/delete-workers=8", "flood/inflight=0"} {
		if _, err := ParseSide(bad); err == nil || !strings.HasPrefix(err.Error(), "realapiserver: ") {
			t.Errorf("%q: got %v, want a realapiserver error", bad, err)
		}
	}
}

func TestChildArgs(t *testing.T) {
	want := ChildConfig{Side: Side{Mode: clientgo.ModeEvict, DeleteWorkers: 64}, Kubeconfig: "/k",
		Client: Client{QPS: 1000, Burst: 2000, ContentType: ContentJSON, EventsQPS: 50, EventsBurst: 100}, ExitWhenSynced: true,
		Profile: "/tmp/side.pprof"}
	got, err := ParseChildArgs(ChildArgs(want))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v, want %+v", got, err, want)
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command name with a space and a parenthesis; utime 1234 and stime 566 ticks.
	stat := "4242 (kube api) server) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 566 0 0 20 0 30 0 100 0 0"
	got, err := parseStatCPU(stat)
	if want := 18 * time.Second; err != nil || got != want {
		t.Errorf("got %v, %v, want %v", got, err, want)
	}
	for _, bad := range []string{"4242 kube-apiserver S 1", "4242 (x) S 1 2", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 a b"} {
		if _, err := parseStatCPU(bad); err == nil {
			t.Errorf("%q: got no error", bad)
		}
	}
}

func TestLoadFlowSchema(t *testing.T) {
	fs, user, err := LoadFlowSchema(filepath.Join("..", FlowSchemaFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := user, "system:serviceaccount:taintevict-system:taintevict-controller"; got != want {
		t.Errorf("user: got %q, want %q", got, want)
	}
	if got, want := fs.Spec.PriorityLevelConfiguration.Name, "workload-high"; got != want {
		t.Errorf("priority level: got %q, want %q", got, want)
	}
	if _, _, err := LoadFlowSchema("nope.yaml"); err == nil {
		t.Error("a missing file: got no error")
	}
}

// TestReport: the tables carry the medians, kube's last removal over each side's, and what
// went wrong in a run.
func TestReport(t *testing.T) {
	res := func(side string, run int, last float64) Result {
		r := Result{Side: side, QPS: 50, Burst: 100, Nodes: 100, PodsPerNode: 20, Run: run,
			Measurement: Measurement{Evictions: 1000, Removed: 1000, First: 0.1, Half: last / 2, Last: last,
				Requests: map[string]int{"delete pods": 1000, "patch pods/status": 1000}, Events: 1000}}
		return r
	}
	flood := func(run int, last float64) Result {
		r := res("flood/inflight=128", run, last)
		r.Events = 0 // the flood writes none
		return r
	}
	rs := []Result{res("kube", 0, 58), res("ours", 0, 40), res("kube", 1, 60), res("ours", 1, 38), res("kube", 2, 56), res("ours", 2, 39),
		flood(0, 20), flood(1, 25), flood(2, 24)}
	rs[5].RemovedTwice = 2
	var b strings.Builder
	Report(&b, rs)
	out := b.String()
	for _, want := range []string{
		"#### qps 50, burst 100 (100 nodes × 20 pods, 1000 untolerating",
		// 2,000 requests in 57.9 s: 35 a second, 0.41 of the flood's 2,000 in 23.9 s (84).
		"| kube-controller-manager's | 3 | 0.10 (0.10–0.10) | 29.0 (28.0–30.0) | 58.00 (56.00–60.00) | – | 38.0 | 1.53 | 35 (33–36) | 0.41 |",
		"| ours, defaults | 3 | 0.10 (0.10–0.10) | 19.5 (19.0–20.0) | 39.00 (38.00–40.00) | 1.49x | 38.0 | 1.03 | 51 (50–53) | 0.61 |",
		"| the flood (capacity) `-inflight=128` | 3 | 0.10 (0.10–0.10) | 12.0 (10.0–12.5) | 24.00 (20.00–25.00) | – | – | – | 84 (80–101) | 1.00 |",
		"**2.00**: delete pods 1.00, patch pods/status 1.00",
		"run 3: 2 removed twice",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("got\n%s\nwant it to contain %q", out, want)
		}
	}
	// The tables are Markdown: every row has as many cells as its header.
	cells := 0
	for line := range strings.Lines(out) {
		switch {
		case strings.HasPrefix(line, "| side |"):
			cells = strings.Count(line, "|")
		case strings.HasPrefix(line, "|") && strings.Count(line, "|") != cells:
			t.Errorf("row %q: got %d bars, want %d as its header", line, strings.Count(line, "|"), cells)
		}
	}
}
