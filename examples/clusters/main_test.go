package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestClustersGolden compares the whole output with testdata/output.golden, so that a
// change of what the engine decides, or of when, shows as a diff. Regenerate after an
// intended change of the output: go run . > testdata/output.golden
func TestClustersGolden(t *testing.T) {
	want, err := os.ReadFile("testdata/output.golden")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := run(&got); err != nil {
		t.Fatalf("run: %v", err)
	}
	if got.String() != string(want) {
		t.Errorf("output differs from testdata/output.golden:\n%s", got.String())
	}
}

// TestClustersOutcomes checks the story the timeline tells, line by line, apart from its
// wording: what moves, when, and where to.
func TestClustersOutcomes(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, want := range []string{
		"+00:00    moved      shop/web       us-east-1 -> us-east-2",   // tolerates nothing: at once, same region
		"+01:00    moved      shop/api       us-east-1 -> us-east-2",   // at TimeAdded + 60 s
		"+02:00    moved      shop/web       us-east-2 -> eu-west-1",   // its region is down: another
		"+03:00    moved      shop/api       us-east-2 -> eu-west-1",   // due before us-east-1 is back
		"+03:00    cancelled  shop/db        on us-east-1: NotTainted", // its cluster recovered first
		"+02:10    delayed    shop/cart      on us-east-2: OwnerLimit", // storefront moved web a moment ago
		"+03:00    moved      shop/cart      us-east-2 -> eu-west-1",   // a minute after web
		"  us-east-1  shop/db, logging/agent",                          // agent tolerates forever
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("the output lacks the line %q", want)
		}
	}
	if n := strings.Count(out.String(), "moved      shop/db"); n != 0 {
		t.Errorf("shop/db moved %d times, want never: its cluster recovered before its 300 s ran out", n)
	}
}

// TestClustersObserverContract runs the engine's Observer contract
// (evictiontest.CheckContract) over this instantiation's reports.
func TestClustersObserverContract(t *testing.T) {
	all := &evictiontest.Observer{}
	if err := run(io.Discard, all); err != nil {
		t.Fatalf("run: %v", err)
	}
	events := all.Events()
	if len(all.Of(evictiontest.Succeeded)) == 0 {
		t.Fatalf("no workload moved: reports %v", events)
	}
	for _, key := range evictiontest.Targets(events) {
		if _, err := evictiontest.CheckContract(evictiontest.EventsOf(events, key), false); err != nil {
			t.Errorf("%s: %v; reports %v", key, err, evictiontest.EventsOf(events, key))
		}
	}
}
