package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "outage:", err)
		os.Exit(1)
	}
}

// scenario is one simulation: the pods of the cluster (on the same nodes), the Manager's
// options, and the script of what happens to the cluster, and when.
type scenario struct {
	intro  string
	pods   []podSpec
	opts   eviction.Options
	script []action
	// key is the taint the pods' tolerations are shown for: unreachable when empty.
	key string
	// owners names the controller of some pods ("namespace/name" -> "DaemonSet/agent").
	owners map[string]string
	// grace is how long a deleted pod takes to terminate (0: it is gone at once).
	grace time.Duration
	// later are pods the script creates, in the order of the output after pods.
	later []podSpec
}

type action struct {
	at   time.Duration
	what string
	do   func(c *cluster)
}

var scenarios = append([]scenario{
	{
		intro: "A zone outage, simulated",
		pods:  pods,
		script: []action{
			{0, "zone-a loses contact: node-a1, node-a2 and node-a3 get " + unreachable + ":NoExecute", func(c *cluster) {
				c.taint("node-a1")
				c.taint("node-a2")
				c.taint("node-a3")
			}},
			{2 * time.Minute, "node-a3 is back: its taint is removed", func(c *cluster) {
				c.untaint("node-a3")
			}},
		},
	},
	{
		intro: "A whole-zone partition, with a brake (Options.Brake.ZoneFraction 0.5)",
		pods:  partitionPods,
		opts:  eviction.Options{Brake: eviction.Brake{ZoneFraction: 0.5}},
		script: []action{
			{0, "zone-a is cut off: node-a1, node-a2 and node-a3 get " + unreachable + ":NoExecute; 3 of 3 nodes in zone-a, the brake holds zone-a's evictions", func(c *cluster) {
				c.taint("node-a1")
				c.taint("node-a2")
				c.taint("node-a3")
			}},
			{30 * time.Second, "node-b1 fails: 1 of 2 nodes in zone-b, not more than half, zone-b's evictions go on", func(c *cluster) {
				c.taint("node-b1")
			}},
			{4 * time.Minute, "node-a1 is back: 2 of 3 nodes in zone-a still unreachable, the brake holds", func(c *cluster) {
				c.untaint("node-a1")
			}},
			{4 * time.Minute, "node-a2 is back: 1 of 3, the brake releases what fell due meanwhile on node-a3", func(c *cluster) {
				c.untaint("node-a2")
			}},
		},
	},
}, budgetScenarios...)

// cluster is one scenario's simulation and what it prints.
type cluster struct {
	*sim
	podIndex
	sc      scenario
	w       io.Writer
	evicted []evictedPod
	tainted []string // nodes the current step tainted
}

// run runs every scenario and writes their timelines to w.
func run(w io.Writer) error {
	for i, sc := range scenarios {
		if i > 0 {
			fmt.Fprintf(w, "\n%s\n\n", strings.Repeat("-", 90))
		}
		if err := runScenario(w, sc); err != nil {
			return err
		}
	}
	return nil
}

// runScenario runs one simulation and writes its timeline to w: set the cluster, then at
// each tick step the clock, play the script, wait until the Manager is idle, and print.
func runScenario(w io.Writer, sc scenario) (err error) {
	s, err := newSim(start, sc.opts, sc.grace)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := s.stop(); err == nil {
			err = stopErr
		}
	}()
	c := &cluster{sim: s, podIndex: indexPods(append(slices.Clone(sc.pods), sc.later...)), sc: sc, w: w}
	c.printIntro()

	// The informers' initial list: nothing is tainted yet, so nothing is scheduled.
	for _, n := range nodes {
		s.setNode(nodeObject(n.name, n.zone))
	}
	for _, p := range sc.pods {
		s.setPod(podObject(p, sc.owners[p.namespace+"/"+p.name], start.Add(-time.Hour)))
	}
	if err := s.wait(); err != nil {
		return err
	}
	c.print(s.take())

	fmt.Fprintln(w, "Timeline (time since the outage began):")
	for t := time.Duration(0); t <= end; t += tick {
		if t > 0 {
			if err := s.stepTo(start.Add(t)); err != nil {
				return err
			}
			events := s.take()
			c.print(events)
			if err := c.printReaped(); err != nil {
				return err
			}
			if slices.ContainsFunc(events, func(e evictiontest.Event) bool { return e.Kind == evictiontest.Delayed }) {
				c.printPending() // what waits, and since when
			}
		}
		if err := c.play(t); err != nil {
			return err
		}
	}
	c.printSummary()
	return nil
}

// play does what the script says for time t, waits, and prints what the Manager decided.
func (c *cluster) play(t time.Duration) error {
	for _, a := range c.sc.script {
		if a.at != t {
			continue
		}
		fmt.Fprintf(c.w, "%s  * %s\n", since(c.clock.Now()), a.what)
		c.tainted = nil
		a.do(c)
		if err := c.wait(); err != nil {
			return err
		}
		c.print(c.withKept(c.take()))
		c.printPending()
	}
	return nil
}

// taint adds the unreachable NoExecute taint to a node, added now.
func (c *cluster) taint(name string) { c.taintWith(name, unreachable) }

// taintWith adds a NoExecute taint with key to a node, added now.
func (c *cluster) taintWith(name, key string) {
	c.tainted = append(c.tainted, name)
	now := metav1.NewTime(c.clock.Now())
	c.updateNode(name, func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute, TimeAdded: &now})
	})
}

// untaint removes the unreachable taint from a node.
func (c *cluster) untaint(name string) { c.untaintKey(name, unreachable) }

// untaintKey removes the taints with key from a node.
func (c *cluster) untaintKey(name, key string) {
	c.updateNode(name, func(n *v1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == key })
	})
}

// printReaped removes the Terminating pods whose time has come, as their kubelet would,
// waits for what that causes, and prints it.
func (c *cluster) printReaped() error {
	gone := c.reap()
	if len(gone) == 0 {
		return nil
	}
	if err := c.wait(); err != nil {
		return err
	}
	slices.SortFunc(gone, func(a, b string) int { return cmp.Compare(c.order[a], c.order[b]) })
	for _, p := range gone {
		fmt.Fprintf(c.w, "%s    %-9s  %-16s  %s\n", since(c.clock.Now()), "gone", p, "terminated")
	}
	c.print(c.take())
	return nil
}

// updateNode stores a changed copy of a node, as the API server would.
func (c *cluster) updateNode(name string, change func(*v1.Node)) {
	old, _ := c.cache.Node(name)
	n := old.DeepCopy()
	change(n)
	c.setNode(n)
}
