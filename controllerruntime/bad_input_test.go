package controllerruntime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/metrics"
	"github.com/taintevict/taintevict/controllerruntime"
	"github.com/taintevict/taintevict/eviction"
)

// newManager returns a manager on the test's control plane that is never started.
func newManager(t *testing.T) manager.Manager {
	t.Helper()
	mgr, err := manager.New(adminConfig, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// TestNewBadInput: New refuses, with an error that names the mistake, what it cannot run.
func TestNewBadInput(t *testing.T) {
	meter := metrics.NewMeter(prometheus.NewRegistry())
	for _, tc := range []struct {
		name  string
		mgr   func(*testing.T) manager.Manager
		opts  controllerruntime.Options
		twice bool // New a second time on the same manager
		want  string
	}{
		{"nil manager", func(*testing.T) manager.Manager { return nil }, controllerruntime.Options{}, false, "controllerruntime: nil manager"},
		{"Manager.DryRun", newManager, controllerruntime.Options{Manager: eviction.Options{DryRun: true}}, false, "ask for a dry run with Mode"},
		{"unknown Mode", newManager, controllerruntime.Options{Mode: "drain"}, false, `controllerruntime: clientgo: unknown Mode "drain"`},
		{"negative PDBTimeout", newManager, controllerruntime.Options{Mode: clientgo.ModeEvict, PDBTimeout: -1}, false, "controllerruntime: clientgo:"},
		{"a brake out of range", newManager, controllerruntime.Options{Manager: eviction.Options{Brake: eviction.Brake{Fraction: 2}}}, false, "controllerruntime: "},
		{"spec.nodeName indexed already", indexed, controllerruntime.Options{}, false, "controllerruntime: indexing pods by spec.nodeName"},
		{"metrics of two Controllers on one registry", newManager, controllerruntime.Options{Metrics: meter}, true, "controllerruntime: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mgr := tc.mgr(t)
			if tc.twice {
				if _, err := controllerruntime.New(t.Context(), mgr, tc.opts); err != nil {
					t.Fatalf("first New: %v", err)
				}
				mgr = newManager(t)
			}
			c, err := controllerruntime.New(t.Context(), mgr, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error: got %v, want one containing %q", err, tc.want)
			}
			if c != nil {
				t.Errorf("Controller: got %p, want nil", c)
			}
		})
	}
}

// indexed returns a manager whose pods are indexed by spec.nodeName already.
func indexed(t *testing.T) manager.Manager {
	t.Helper()
	mgr := newManager(t)
	err := mgr.GetFieldIndexer().IndexField(t.Context(), &v1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*v1.Pod).Spec.NodeName}
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// TestStartTwice: a Controller runs once; a second Start returns an error at once, and the
// first goes on.
func TestStartTwice(t *testing.T) {
	s := newScene(t)
	r := start(t, s.ns, user(t, s.ns), manager.Options{}, controllerruntime.Options{})
	waitFor(t, r.c.Synced(), "the Controller handed the caches to its Manager")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.c.Start(ctx); err == nil || !strings.HasPrefix(err.Error(), "controllerruntime: ") {
		t.Errorf("second Start: got %v, want an error", err)
	}
	if !r.c.Leading() {
		t.Error("after a second Start: the first has stopped")
	}
}

// TestNeedLeaderElection: the zero Options need the manager's leader election; false in
// Options.NeedLeaderElection does not.
func TestNeedLeaderElection(t *testing.T) {
	for _, tc := range []struct {
		name string
		need *bool
		want bool
	}{
		{"nil", nil, true},
		{"true", ptr.To(true), true},
		{"false", ptr.To(false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := controllerruntime.New(t.Context(), newManager(t), controllerruntime.Options{NeedLeaderElection: tc.need})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.NeedLeaderElection(); got != tc.want {
				t.Errorf("got %t, want %t", got, tc.want)
			}
		})
	}
}
