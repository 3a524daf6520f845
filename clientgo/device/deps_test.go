package device

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestDependencies: the package links neither Prometheus (its init registers collectors on
// the global registry) nor client-go's leader election; a program that wants them imports
// clientgo/metrics or clientgo/lease (whose own test, in clientgo, shows that the check
// finds them).
func TestDependencies(t *testing.T) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the dependencies (install Go, https://go.dev/doc/install): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, gocmd, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, heavy := range []string{"github.com/prometheus/", "k8s.io/client-go/tools/leaderelection"} {
			if strings.HasPrefix(dep, heavy) {
				t.Errorf("go list -deps .: got %s, want no %s*", dep, heavy)
			}
		}
	}
}
