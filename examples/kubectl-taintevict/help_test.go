package main

import (
	"strings"
	"testing"
)

// TestHelpTellsTheDeadlineSource: what-if's and explain's help warn that on a cluster still
// running kube's own taint-eviction-controller, the times shown are taintevict's unless
// --deadline-source=observation is given, and say how kube's is turned off.
func TestHelpTellsTheDeadlineSource(t *testing.T) {
	for _, command := range []string{"what-if", "explain"} {
		t.Run(command, func(t *testing.T) {
			code, out, errOut := runOn(t, nil, nil, command, "--help")
			if code != exitOK {
				t.Fatalf("%s --help: exit code %d, want %d; stderr %q", command, code, exitOK, errOut)
			}
			help := strings.Join(strings.Fields(out), " ")
			for _, want := range []string{
				"kube-controller-manager's own taint-eviction-controller still evicts",
				"--controllers=*,-taint-eviction-controller",
				"the times shown are taintevict's, not its, unless --deadline-source=observation is given",
			} {
				if !strings.Contains(help, want) {
					t.Errorf("%s --help: got no %q in %q", command, want, help)
				}
			}
		})
	}
}
