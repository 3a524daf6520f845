package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "outage:", err)
		os.Exit(1)
	}
}

// The script: what happens to the cluster, and when.
var script = []struct {
	at   time.Duration
	what string
	do   func(c *cluster)
}{
	{0, "zone-a loses contact: node-a1, node-a2 and node-a3 get " + unreachable + ":NoExecute", func(c *cluster) {
		c.taint("node-a1")
		c.taint("node-a2")
		c.taint("node-a3")
	}},
	{2 * time.Minute, "node-a3 is back: its taint is removed", func(c *cluster) {
		c.untaint("node-a3")
	}},
}

// cluster is the simulation and what it prints.
type cluster struct {
	*sim
	w       io.Writer
	evicted []evictedPod
	tainted []string // nodes the current step tainted
}

// run runs the simulation and writes its timeline to w: set the cluster, then at each tick
// step the clock, play the script, wait until the Manager is idle, and print.
func run(w io.Writer) (err error) {
	s, err := newSim(start)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := s.stop(); err == nil {
			err = stopErr
		}
	}()
	c := &cluster{sim: s, w: w}
	c.printIntro()

	// The informers' initial list: nothing is tainted yet, so nothing is scheduled.
	for _, n := range nodes {
		s.setNode(nodeObject(n.name, n.zone))
	}
	for _, p := range pods {
		s.setPod(podObject(p))
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
			c.print(s.take())
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
	for _, a := range script {
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
func (c *cluster) taint(name string) {
	c.tainted = append(c.tainted, name)
	now := metav1.NewTime(c.clock.Now())
	c.updateNode(name, func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: unreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &now})
	})
}

// untaint removes the unreachable taint from a node.
func (c *cluster) untaint(name string) {
	c.updateNode(name, func(n *v1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == unreachable })
	})
}

// updateNode stores a changed copy of a node, as the API server would.
func (c *cluster) updateNode(name string, change func(*v1.Node)) {
	old, _ := c.cache.Node(name)
	n := old.DeepCopy()
	change(n)
	c.setNode(n)
}
