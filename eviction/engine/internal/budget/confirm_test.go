package budget

import (
	"slices"
	"testing"
)

// TestConfirm: an eviction is held when each of its causes is held by every scope that
// puts it on its holder: over the fraction and the minimum, not confirmed, or not counted
// yet; it waits under its scope, or under the shared scope when several hold it, and goes
// once released and no longer held.
func TestConfirm(t *testing.T) {
	const shared = "(shared)"
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
	g := NewGate[uint64](b)
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
		scope string // "" for one that goes; shared for ConfirmScope("")
	}{
		{"a rule over the fraction", []string{"bad"}, "rule all"},
		{"a rule under it", []string{"ecc"}, ""},
		{"one held cause and one not", []string{"bad", "ecc"}, ""},
		{"two held causes, two scopes: the shared scope", []string{"both", "bad"}, shared},
		{"two held causes of one scope: that scope", []string{"bad", "bad"}, "rule all"},
		{"a cause of two scopes, one under the fraction", []string{"mixed"}, ""},
		{"a scope not counted yet", []string{"new"}, "rule new"},
		{"a confirmed scope", []string{"ok"}, ""},
		{"a scope under the minimum", []string{"tiny"}, ""},
		{"a cause the census does not know", []string{"unknown"}, ""},
		{"no cause", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := req(1, "ns", "p", 0, causes(tc.keys...)...)
			h, d := g.Admit(1, r, nil, false)
			if d.Wait != (tc.scope != "") || d.Until != 0 || tc.scope != "" && d.Reason != "Unconfirmed" {
				t.Fatalf("got %+v, want held %v, reported Unconfirmed", d, tc.scope != "")
			}
			if tc.scope == "" {
				return
			}
			if got := g.Wake(ConfirmScope("something else")); len(got) != 0 {
				t.Errorf("Wake of another scope woke %v", got)
			}
			scope := tc.scope
			if scope == shared {
				if got := g.Wake(ConfirmScope("pool p")); len(got) != 0 {
					t.Errorf("Wake of one of its scopes woke %v: want it under the shared scope", got)
				}
				scope = ""
			}
			if got := g.Wake(ConfirmScope(scope)); !slices.Equal(got, []Woken[uint64]{{Ev: 1}}) {
				t.Errorf("Wake(%q) woke %v, want the eviction", scope, got)
			}
			g.Release(1, h, 0)
		})
	}
	// Confirmed after all: held, then released, it goes.
	h, d := g.Admit(2, req(2, "ns", "p", 0, causes("bad")...), nil, false)
	if !d.Wait {
		t.Fatalf("bad: got %+v, want it held", d)
	}
	counts["rule all"] = Reach{Scope: "rule all", Evicts: 90, Targets: 100, Counted: true, Confirmed: true}
	g.Wake(ConfirmScope("rule all"))
	if _, d := g.Admit(2, req(2, "ns", "p", 0, causes("bad")...), h, false); d.Wait {
		t.Errorf("bad, confirmed: got %+v, want it to go", d)
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
