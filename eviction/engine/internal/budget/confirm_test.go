package budget

import (
	"maps"
	"slices"
	"testing"
)

// TestConfirm: an eviction is held when each of its causes is held by every scope that
// puts it on its holder: over the fraction and the minimum, not confirmed, or not counted
// yet; it waits for the scope of its first cause, and goes once that scope is released
// and no longer holds.
func TestConfirm(t *testing.T) {
	counts := map[string]Reach{
		"rule all":  {Scope: "rule all", Evicts: 90, Targets: 100, Counted: true},
		"rule one":  {Scope: "rule one", Evicts: 1, Targets: 100, Counted: true},
		"pool p":    {Scope: "pool p", Evicts: 60, Targets: 100, Counted: true},
		"rule new":  {Scope: "rule new"},
		"rule ok":   {Scope: "rule ok", Evicts: 100, Targets: 100, Counted: true, Confirmed: true},
		"rule tiny": {Scope: "rule tiny", Evicts: 2, Targets: 2, Counted: true},
	}
	scopes := map[string][]string{ // by cause key
		"bad":   {"rule all"},
		"ecc":   {"rule one"},
		"both":  {"pool p", "rule all"},
		"mixed": {"pool p", "rule one"},
		"new":   {"rule new"},
		"ok":    {"rule ok", "rule all"},
		"tiny":  {"rule tiny"},
	}
	reach := func(c Cause, into []Reach) []Reach {
		for _, sc := range scopes[c.Key] {
			into = append(into, counts[sc])
		}
		return into
	}
	b := NewConfirm(0.5, 3, reach)
	g := NewGate(b)
	causes := func(keys ...string) []Cause {
		var cs []Cause
		for _, k := range keys {
			cs = append(cs, Cause{Holder: "d", Key: k})
		}
		return cs
	}
	for _, tc := range []struct {
		name  string
		keys  []string
		scope string // "" for one that goes
	}{
		{"a rule over the fraction", []string{"bad"}, "rule all"},
		{"a rule under it", []string{"ecc"}, ""},
		{"one held cause and one not", []string{"bad", "ecc"}, ""},
		{"two held causes: the first's scope", []string{"both", "bad"}, "pool p"},
		{"a cause of two scopes, one under the fraction", []string{"mixed"}, ""},
		{"a scope not counted yet", []string{"new"}, "rule new"},
		{"a confirmed scope", []string{"ok"}, ""},
		{"a scope under the minimum", []string{"tiny"}, ""},
		{"a cause the census does not know", []string{"unknown"}, ""},
		{"no cause", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := req(1, "ns", "p", 0, causes(tc.keys...)...)
			h, d := g.Admit(r, nil)
			if d.Wait != (tc.scope != "") || d.Until != 0 || tc.scope != "" && d.Report != "Unconfirmed" {
				t.Fatalf("got %+v, want held %v, reported Unconfirmed", d, tc.scope != "")
			}
			if tc.scope == "" {
				return
			}
			if got := g.Wake(ConfirmScope("something else")); len(got) != 0 {
				t.Errorf("Wake of another scope woke %v", got)
			}
			if got := g.Wake(ConfirmScope(tc.scope)); !slices.Equal(got, []Woken{{ID: 1}}) {
				t.Errorf("Wake(%q) woke %v, want the eviction", tc.scope, got)
			}
			g.Release(1, h, 0)
		})
	}
	// Confirmed after all: held, then released, it goes.
	h, d := g.Admit(req(2, "ns", "p", 0, causes("bad")...), nil)
	if !d.Wait {
		t.Fatalf("bad: got %+v, want it held", d)
	}
	counts["rule all"] = Reach{Scope: "rule all", Evicts: 90, Targets: 100, Counted: true, Confirmed: true}
	g.Wake(ConfirmScope("rule all"))
	if _, d := g.Admit(req(2, "ns", "p", 0, causes("bad")...), h); d.Wait {
		t.Errorf("bad, confirmed: got %+v, want it to go", d)
	}
	if got := g.Delayed(); len(got) != 0 {
		t.Errorf("Delayed() = %v, want none", maps.Collect(maps.All(got)))
	}
}

func TestExceeds(t *testing.T) {
	for _, tc := range []struct {
		fraction               float64
		least, evicts, targets int
		want                   bool
	}{
		{0.5, 0, 6, 10, true},
		{0.5, 0, 5, 10, false}, // exactly the fraction: not more
		{0.5, 0, 1, 1, true},   // least 0 means 1
		{0.5, 0, 0, 0, false},
		{0.5, 5, 4, 4, false},
		{0, 0, 10, 10, false}, // off
		{1, 0, 10, 10, false}, // 1 never holds
	} {
		if got := Exceeds(tc.fraction, tc.least, tc.evicts, tc.targets); got != tc.want {
			t.Errorf("Exceeds(%v, %d, %d, %d) = %v, want %v", tc.fraction, tc.least, tc.evicts, tc.targets, got, tc.want)
		}
	}
}
