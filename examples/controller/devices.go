package main

import (
	"context"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/device"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// controllers is what -controllers runs, on one factory and under one Lease.
type controllers interface {
	Run(ctx context.Context) error
	Handler(metrics http.Handler) http.Handler
}

// controllerSet is what -controllers runs, and what the debug and admission handlers read
// of it.
type controllerSet struct {
	controllers                      // to run: the node Controller (the device side's Lead alongside), or the device Controller alone
	node        *clientgo.Controller // nil without the node side
	dev         *device.Controller   // nil without the device side
	sides       []pendingSide        // for /debug/pending
}

// newControllers makes the controllers cfg names: the node Controller, with the device
// side's Lead alongside it under its Lease when both run; or the device Controller alone,
// under the same Lease. Both tell obs every decision, write their Events through events
// (nil: through client), report to cfg.reach, and keep their metrics with meter (one
// registry, one /metrics, for both). Each side's attempts are kept for /debug/pending.
func newControllers(ctx context.Context, client, events kubernetes.Interface, cfg config, meter clientgo.Meter, obs *lineObserver) (*controllerSet, error) {
	factory := clientgo.NewFactory(client)
	elector, err := cfg.elector(client)
	if err != nil {
		return nil, err
	}
	set := &controllerSet{}
	if cfg.device.runs(controllerDevice) {
		tried := newAttempts(sideDevice, time.Now)
		dopts := deviceOptions(cfg, obs)
		dopts.EventClient = events
		dopts.Observers = append(dopts.Observers, tried)
		dopts.Reachability = cfg.reach // the node Controller's too: one serves both
		dopts.Metrics = meter
		if !cfg.device.runs(controllerNode) {
			dopts.Elector = elector // else the node Controller's, which runs its Lead
		}
		if set.dev, err = device.NewController(ctx, client, factory, dopts); err != nil {
			return nil, err
		}
		set.controllers = set.dev
		set.sides = append(set.sides, pendingSide{name: sideDevice, pendingOf: set.dev.Engine().PendingOf, attempts: tried, budget: cfg.budgets.Text})
		if !cfg.device.runs(controllerNode) {
			return set, nil
		}
	}
	tried := newAttempts(sideNode, time.Now)
	opts := cfg.controllerOptions()
	opts.Metrics = meter
	opts.Elector = elector
	opts.EventClient = events
	opts.Observers = []eviction.Observer{obs, tried}
	opts.Reachability = cfg.reach
	if set.dev != nil {
		opts.Alongside = []func(context.Context) error{set.dev.Lead}
	}
	c, err := clientgo.NewController(ctx, client, factory, opts)
	if err != nil {
		return nil, err
	}
	set.node, set.controllers = c, c
	set.sides = append([]pendingSide{{name: sideNode, pendingOf: c.Manager().PendingOf, attempts: tried, budget: cfg.budgets.Text}}, set.sides...)
	return set, nil
}

// deviceOptions are the device Controller's options of cfg: the node side's mode,
// workers, backoff, deadline source and budgets (each controller counts its own).
func deviceOptions(cfg config, obs *lineObserver) device.Options {
	node := cfg.controllerOptions()
	m := node.Manager
	eo := engine.Options{Workers: m.Workers, ActWorkers: m.ActWorkers, MaxActWorkers: m.MaxActWorkers,
		ActTimeout: m.ActTimeout, Backoff: m.Backoff, DeadlineSource: m.DeadlineSource}
	// The same act workers as the node side: -delete-workers pins them, 0 follows the
	// client's budget, up to -max-delete-workers.
	cfg.budgets.Apply(&eo)
	return device.Options{
		Mode: node.Mode, PDBTimeout: node.PDBTimeout, PodGroups: cfg.device.podGroups,
		Engine: eo, Observers: []engine.Observer{deviceObserver{Observer: obs, DeleteObserver: obs}},
	}
}

// deviceObserver is the command's line observer for the device side: the engine's reports,
// with the device in PodRef.Holder, and how each pod went.
type deviceObserver struct {
	engine.Observer
	clientgo.DeleteObserver
}

// deviceNeeds lists what the device side needs RBAC to allow, beyond listing and watching
// pods (deploy/device/rbac.yaml).
func deviceNeeds(cfg config) []permission {
	var p []permission
	for _, r := range []string{"resourceclaims", "resourceslices", "devicetaintrules"} {
		p = append(p, permission{group: "resource.k8s.io", resource: r, verb: "list"}, permission{group: "resource.k8s.io", resource: r, verb: "watch"})
	}
	if cfg.mode != clientgo.ModeDryRun {
		p = append(p, permission{group: "resource.k8s.io", resource: "devicetaintrules", subresource: "status", verb: "patch"})
	}
	return p
}
