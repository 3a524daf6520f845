package clientgo

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// heavy are the dependencies that only the programs that use them link: Prometheus (its
// init registers collectors on the global registry) and client-go's leader election.
var heavy = []string{"github.com/prometheus/", "k8s.io/client-go/tools/leaderelection"}

// TestDependencies: the package clientgo links neither Prometheus nor leader election;
// clientgo/metrics and clientgo/lease, which a program imports to use them, do (so the
// check can fail). clientgo/device, a module of its own, checks itself the same way.
func TestDependencies(t *testing.T) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the dependencies (install Go, https://go.dev/doc/install): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		pkg   string
		links []string // those of heavy it links
	}{
		{".", nil},
		{"./metrics", heavy[:1]},
		{"./lease", heavy[1:]},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			out, err := exec.CommandContext(ctx, gocmd, "list", "-deps", tc.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", tc.pkg, err)
			}
			var links []string
			for _, h := range heavy {
				for _, dep := range strings.Fields(string(out)) {
					if strings.HasPrefix(dep, h) {
						links = append(links, h)
						break
					}
				}
			}
			if !slices.Equal(links, tc.links) {
				t.Errorf("go list -deps %s: got it linking %q, want %q", tc.pkg, links, tc.links)
			}
		})
	}
}
