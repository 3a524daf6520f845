package engine

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestLifecycleTable: the table in eviction.go's doc comment is the one the code applies
// (transitions), row by row, so that the two cannot drift apart; and every state is
// reached by some transition and left by some other.
func TestLifecycleTable(t *testing.T) {
	byName := map[string]transition{}
	for _, tr := range transitions {
		byName[tr.name] = tr
	}
	src, err := os.ReadFile("eviction.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(src), "\n") {
		row, ok := strings.CutPrefix(line, "//\t")
		if !ok || strings.HasPrefix(row, "transition") {
			continue
		}
		fields := strings.Fields(row)
		if len(fields) < 3 {
			continue
		}
		name := fields[0]
		tr, ok := byName[name]
		if !ok {
			t.Errorf("the doc's table has %q, the code's has not", name)
			continue
		}
		names = append(names, name)
		// The row: name, from-states (comma separated), to-state, report.
		var from []string
		i := 1
		for ; i < len(fields); i++ {
			s := strings.TrimSuffix(fields[i], ",")
			from = append(from, s)
			if !strings.HasSuffix(fields[i], ",") {
				break
			}
		}
		var want []string
		for _, s := range tr.from {
			want = append(want, s.String())
		}
		if !slices.Equal(from, want) {
			t.Errorf("%s: the doc says from %v, the code %v", name, from, want)
		}
		if i+1 >= len(fields) || fields[i+1] != tr.to.String() {
			t.Errorf("%s: the doc says to %v, the code %v", name, fields[i+1:], tr.to)
		}
	}
	for _, tr := range transitions {
		if !slices.Contains(names, tr.name) {
			t.Errorf("the code's table has %q, the doc's has not", tr.name)
		}
	}
	for s := idle; s < nStates; s++ {
		var in, out bool
		for _, tr := range transitions {
			in = in || tr.to == s
			out = out || slices.Contains(tr.from, s)
		}
		if !in || !out {
			t.Errorf("state %s: reached %v, left %v; want both", s, in, out)
		}
	}
}
