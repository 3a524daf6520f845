package main

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
)

// maintenance is the taint of the last scenario: an operator's, not the node lifecycle
// controller's.
const maintenance = "example.com/maintenance"

// budgetScenarios show the budgets against mass eviction that kube's controller does not
// have: caps on the evictions in flight and per namespace, the brake's floor and a fully
// disrupted zone's own rate, and a taint on every node held until an operator confirms it,
// with a DaemonSet that puts its pod back damped.
var budgetScenarios = []scenario{
	{
		intro: "A zone outage under caps: at most 2 evictions in flight, a pod taking 30s to terminate (Options.InFlight.Max 2), and at most 2 a minute per namespace (Options.NamespaceLimit)",
		pods:  capPods,
		grace: 30 * time.Second,
		// One act worker: the pods due in the same step ask the budgets in deadline order.
		opts: eviction.Options{ActWorkers: 1, InFlight: eviction.InFlight{Max: 2}, NamespaceLimit: eviction.Window{Max: 2, Per: time.Minute}},
		script: []action{
			{0, "zone-a loses contact: node-a1, node-a2 and node-a3 get " + unreachable + ":NoExecute", func(c *cluster) {
				c.taint("node-a1")
				c.taint("node-a2")
				c.taint("node-a3")
			}},
		},
	},
	{
		intro: "A small zone going down: the brake's floor (Options.Brake.ZoneHolders 2) pauses it at 2 nodes of 3; fully down, it goes at a rate of its own (Brake.FullDisruption.Rate, one per 30s)",
		pods:  smallZonePods,
		opts: eviction.Options{ActWorkers: 1, Brake: eviction.Brake{ZoneHolders: 2,
			FullDisruption: eviction.FullDisruption{Rate: eviction.Limit{PerSecond: 1.0 / 30, Burst: 1}}}},
		script: []action{
			{0, "node-a1 fails: 1 of 3 nodes in zone-a", func(c *cluster) { c.taint("node-a1") }},
			{time.Minute, "node-a2 fails: 2 of 3 nodes in zone-a, the floor: the brake holds zone-a", func(c *cluster) { c.taint("node-a2") }},
			{2 * time.Minute, "node-a3 fails: zone-a is fully disrupted, and goes at its own rate", func(c *cluster) { c.taint("node-a3") }},
		},
	},
	{
		intro: "A taint on every node, held until confirmed (Options.Confirm.Fraction 0.4), and a DaemonSet that puts its pod back (Options.LoopDamping, 30s doubling)",
		key:   maintenance,
		pods:  confirmPods,
		later: []podSpec{agentX, agentY},
		owners: map[string]string{
			"logging/agent-a1": "DaemonSet/agent", "logging/agent-a2": "DaemonSet/agent", "logging/agent-b1": "DaemonSet/agent",
			"logging/agent-x1": "DaemonSet/agent", "logging/agent-x2": "DaemonSet/agent",
		},
		opts: eviction.Options{Confirm: eviction.Confirm{Fraction: 0.4},
			LoopDamping: eviction.LoopDamping{Window: 10 * time.Minute, Backoff: eviction.Backoff{Base: 30 * time.Second, Jitter: -1}}},
		script: []action{
			{0, "every node gets " + maintenance + ":NoExecute (kubectl taint nodes --all): it would evict 6 of the 8 pods, more than 0.4 of them", func(c *cluster) {
				for _, n := range nodes {
					c.taintWith(n.name, maintenance)
				}
			}},
			{2 * time.Minute, "an operator confirms it on node-b1: kubectl annotate node node-b1 " + eviction.ConfirmAnnotation + "=" + maintenance, func(c *cluster) {
				c.updateNode("node-b1", func(n *v1.Node) {
					n.Annotations = map[string]string{eviction.ConfirmAnnotation: maintenance}
				})
			}},
			{2*time.Minute + 10*time.Second, "the DaemonSet puts its pod back on node-b1: logging/agent-x1", func(c *cluster) {
				c.recreate(agentX)
			}},
			{2*time.Minute + 40*time.Second, "and again: logging/agent-x2", func(c *cluster) {
				c.recreate(agentY)
			}},
			{4 * time.Minute, "the taint is removed from every node but node-a1: 2 pods of 6 left to evict, under 0.4: they go", func(c *cluster) {
				for _, n := range nodes[1:] {
					c.untaintKey(n.name, maintenance)
				}
			}},
		},
	},
}

// recreate creates the pod p, created now, controlled as the scenario says.
func (c *cluster) recreate(p podSpec) {
	c.setPod(podObject(p, c.sc.owners[p.namespace+"/"+p.name], c.clock.Now()))
}

var capPods = []podSpec{
	{"shop", "web-1", "node-a1", nil, false, "no tolerations"},
	{"shop", "web-2", "node-a1", tolerateFor(1), false, "unreachable for 1s"},
	{"shop", "web-3", "node-a2", tolerateFor(2), false, "unreachable for 2s"},
	{"shop", "web-4", "node-a2", tolerateFor(3), false, "unreachable for 3s"},
	{"batch", "job-1", "node-a3", tolerateFor(4), false, "unreachable for 4s"},
	{"batch", "job-2", "node-a3", tolerateFor(5), false, "unreachable for 5s"},
	{"logging", "agent-b1", "node-b1", tolerateForever, false, "unreachable forever"},
	{"shop", "cart-3", "node-b2", tolerateFor(300), false, "unreachable for 300s"},
}

var smallZonePods = []podSpec{
	{"shop", "web-1", "node-a1", nil, false, "no tolerations"},
	{"shop", "web-2", "node-a2", nil, false, "no tolerations"},
	{"shop", "web-3", "node-a3", nil, false, "no tolerations"},
	{"shop", "queue-1", "node-a3", tolerateFor(5), false, "unreachable for 5s"},
	{"shop", "web-4", "node-b1", nil, false, "no tolerations"},
	{"logging", "agent-b2", "node-b2", tolerateForever, false, "unreachable forever"},
}

// tolerateMaintenance tolerates the maintenance taint for a minute, as a drain tool might
// give its pods: the census has counted every node before anything falls due.
var tolerateMaintenance = []v1.Toleration{{Key: maintenance, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: func() *int64 { s := int64(60); return &s }()}}

var confirmPods = []podSpec{
	{"shop", "web-1", "node-a1", tolerateMaintenance, false, "maintenance for 60s"},
	{"logging", "agent-a1", "node-a1", tolerateMaintenance, false, "maintenance for 60s (DaemonSet agent)"},
	{"shop", "web-2", "node-a2", tolerateMaintenance, false, "maintenance for 60s"},
	{"logging", "agent-a2", "node-a2", tolerateMaintenance, false, "maintenance for 60s (DaemonSet agent)"},
	{"batch", "job-1", "node-a3", []v1.Toleration{{Key: maintenance, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}, false, "maintenance forever"},
	{"shop", "web-3", "node-b1", tolerateMaintenance, false, "maintenance for 60s"},
	{"logging", "agent-b1", "node-b1", tolerateMaintenance, false, "maintenance for 60s (DaemonSet agent)"},
	{"shop", "cart-1", "node-b2", []v1.Toleration{{Key: maintenance, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}, false, "maintenance forever"},
}

// The DaemonSet's pods it puts back on node-b1, with no toleration of the maintenance taint.
var (
	agentX = podSpec{"logging", "agent-x1", "node-b1", nil, false, "no tolerations (DaemonSet agent)"}
	agentY = podSpec{"logging", "agent-x2", "node-b1", nil, false, "no tolerations (DaemonSet agent)"}
)
