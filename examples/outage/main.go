package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "outage:", err)
		os.Exit(1)
	}
}

// unreachable is the taint the node lifecycle controller puts on a node that stopped
// reporting, with the NoExecute effect.
const unreachable = "node.kubernetes.io/unreachable"

// start is the simulated time of +00:00.
var start = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	tick = 10 * time.Second // the clock moves this much at each step
	end  = 6 * time.Minute  // when the simulation stops
)

// nodes of the cluster, and their zones.
var nodes = []struct{ name, zone string }{
	{"node-a1", "zone-a"}, {"node-a2", "zone-a"}, {"node-a3", "zone-a"},
	{"node-b1", "zone-b"}, {"node-b2", "zone-b"},
}

// podSpec is a pod of the cluster and what it tolerates.
type podSpec struct {
	namespace, name, node string
	tolerations           []v1.Toleration
	finished              bool   // its containers have exited (phase Succeeded)
	about                 string // its tolerations, for the table at the start
}

// Tolerations of the unreachable taint: for some seconds, or forever (no
// tolerationSeconds, as DaemonSet pods have); and one of another key, which does not
// tolerate the unreachable taint at all.
func tolerateFor(seconds int64) []v1.Toleration {
	return []v1.Toleration{{Key: unreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &seconds}}
}

var (
	tolerateForever = []v1.Toleration{{Key: unreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
	tolerateGPU     = []v1.Toleration{{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
)

var pods = []podSpec{
	{"shop", "web-1", "node-a1", nil, false, "no tolerations"},
	{"shop", "api-1", "node-a1", tolerateFor(60), false, "unreachable for 60s"},
	{"logging", "agent-a1", "node-a1", tolerateForever, false, "unreachable forever"},

	{"shop", "cart-1", "node-a2", tolerateFor(300), false, "unreachable for 300s"},
	{"batch", "train-1", "node-a2", tolerateGPU, false, "nvidia.com/gpu only"},
	{"batch", "report-1", "node-a2", nil, true, "no tolerations; finished"},
	{"logging", "agent-a2", "node-a2", tolerateForever, false, "unreachable forever"},

	{"shop", "web-2", "node-a3", nil, false, "no tolerations"},
	{"shop", "queue-1", "node-a3", tolerateFor(180), false, "unreachable for 180s"},
	{"shop", "cart-2", "node-a3", tolerateFor(300), false, "unreachable for 300s"},
	{"logging", "agent-a3", "node-a3", tolerateForever, false, "unreachable forever"},

	{"shop", "web-3", "node-b1", nil, false, "no tolerations"},
	{"shop", "api-2", "node-b1", tolerateFor(60), false, "unreachable for 60s"},
	{"logging", "agent-b1", "node-b1", tolerateForever, false, "unreachable forever"},

	{"shop", "cart-3", "node-b2", tolerateFor(300), false, "unreachable for 300s"},
	{"batch", "train-2", "node-b2", tolerateGPU, false, "nvidia.com/gpu only"},
	{"logging", "agent-b2", "node-b2", tolerateForever, false, "unreachable forever"},
}

// about and order map "namespace/name" to podSpec.about and to the place in pods.
var about, order = func() (map[string]string, map[string]int) {
	a, o := map[string]string{}, map[string]int{}
	for i, p := range pods {
		a[p.namespace+"/"+p.name] = p.about
		o[p.namespace+"/"+p.name] = i
	}
	return a, o
}()

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

// cluster is the simulated cluster: the cache that stands for the informers, and the
// Manager running over it.
type cluster struct {
	sim     *sim
	w       io.Writer
	evicted []event
	tainted []string // nodes the current step tainted
}

// run runs the simulation and writes its timeline to w.
func run(w io.Writer) (err error) {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.name
	}
	c := &cluster{w: w}
	s, err := newSim(start, names, eviction.DeleterFunc(c.delete))
	if err != nil {
		return err
	}
	c.sim = s
	defer func() {
		if stopErr := s.stop(); err == nil {
			err = stopErr
		}
	}()

	fmt.Fprintf(w, "A zone outage, simulated: %d nodes in 2 zones, %d pods, one eviction.Manager.\n", len(nodes), len(pods))
	fmt.Fprintf(w, "The clock is fake and moves %v at a time; the output is the same on every run.\n\n", tick)
	c.printCluster()

	// The informers' initial list: every node and pod is added. Nothing is tainted yet, so
	// nothing is scheduled.
	for _, n := range nodes {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: n.name, UID: types.UID("uid-" + n.name),
			Labels: map[string]string{v1.LabelTopologyZone: n.zone},
		}}
		s.cache.SetNode(node)
		s.m.NodeUpdated(nil, node)
	}
	for _, p := range pods {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name, UID: types.UID("uid-" + p.name)},
			Spec:       v1.PodSpec{NodeName: p.node, Tolerations: p.tolerations},
			Status:     v1.PodStatus{Phase: v1.PodRunning},
		}
		if p.finished {
			pod.Status.Phase = v1.PodSucceeded
		}
		s.cache.SetPod(pod)
		s.m.PodUpdated(nil, pod)
	}
	if err := s.settle(); err != nil {
		return err
	}
	c.print(s.take())

	fmt.Fprintln(w, "Timeline (time since the outage began):")
	for t := time.Duration(0); t <= end; t += tick {
		if t > 0 {
			if err := s.advanceTo(start.Add(t)); err != nil {
				return err
			}
			c.print(s.take())
		}
		for _, a := range script {
			if a.at != t {
				continue
			}
			fmt.Fprintf(w, "%s  * %s\n", since(s.clock.Now()), a.what)
			c.tainted = nil
			a.do(c)
			if err := s.settle(); err != nil {
				return err
			}
			c.print(c.withKept(s.take()))
			c.printPending()
		}
	}
	c.printSummary()
	return nil
}

// delete is the Deleter. It deletes the pod, with its UID as a precondition as a real
// Deleter would send it, then reports the deletion as the informer would.
func (c *cluster) delete(_ context.Context, ref eviction.PodRef) error {
	pod, _ := c.sim.cache.Cache.Pod(ref.Namespace, ref.Name)
	if pod == nil || pod.UID != ref.UID {
		return eviction.ErrPodGone
	}
	c.sim.cache.DeletePod(ref.Namespace, ref.Name)
	c.sim.m.PodUpdated(pod, nil)
	return nil
}

// taint adds the unreachable NoExecute taint to a node, added now.
func (c *cluster) taint(name string) {
	c.tainted = append(c.tainted, name)
	now := metav1.NewTime(c.sim.clock.Now())
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

// updateNode stores a changed copy of a node in the cache, then tells the Manager, in the
// order an informer does.
func (c *cluster) updateNode(name string, change func(*v1.Node)) {
	old, _ := c.sim.cache.Node(name)
	n := old.DeepCopy()
	change(n)
	c.sim.cache.SetNode(n)
	c.sim.m.NodeUpdated(old, n)
}

// since formats t as +mm:ss since the start.
func since(t time.Time) string {
	d := t.Sub(start)
	return fmt.Sprintf("+%02d:%02d", int(d/time.Minute), int(d%time.Minute/time.Second))
}

// kindOrder orders the decisions about one pod within a step.
var kindOrder = map[evictiontest.Kind]int{
	evictiontest.Scheduled: 0, evictiontest.Cancelled: 1, evictiontest.Skipped: 2,
	evictiontest.Started: 3, evictiontest.Succeeded: 4, evictiontest.Failed: 5, kept: 6,
}

// print writes a step's decisions, ordered by pod (in the order of pods, so by node) and
// kind: the Manager makes them on several goroutines, in an order that changes from run to
// run.
func (c *cluster) print(events []event) {
	slices.SortStableFunc(events, func(a, b event) int {
		return cmp.Or(
			cmp.Compare(order[a.pod.String()], order[b.pod.String()]),
			cmp.Compare(kindOrder[a.kind], kindOrder[b.kind]),
			a.at.Compare(b.at),
		)
	})
	for _, e := range events {
		var verb, detail string
		switch e.kind {
		case evictiontest.Scheduled:
			verb, detail = "scheduled", "on "+e.pod.Node+", evict at "+since(e.at)
		case evictiontest.Cancelled:
			verb, detail = "cancelled", "on "+e.pod.Node+": "+string(e.reason)
		case evictiontest.Skipped:
			verb, detail = "skipped", "on "+e.pod.Node+": "+string(e.reason)
		case evictiontest.Succeeded:
			verb, detail = "evicted", "from "+e.pod.Node
			c.evicted = append(c.evicted, e)
		case evictiontest.Failed:
			verb, detail = "failed", "on "+e.pod.Node+": "+e.err.Error()
		case kept:
			verb, detail = "kept", "on "+e.pod.Node+", nothing scheduled ("+about[e.pod.String()]+")"
		default:
			continue // Started: the Deleter is called; "evicted" follows
		}
		fmt.Fprintf(c.w, "%s    %-9s  %-16s  %s\n", since(e.now), verb, e.pod, detail)
	}
}

// kept is a pseudo-decision: a pod on a node just tainted that the Manager made no
// decision about. It tolerates the taint forever, so nothing is scheduled.
const kept evictiontest.Kind = "Kept"

// withKept adds a kept event for each pod of a node just tainted that events do not name.
func (c *cluster) withKept(events []event) []event {
	decided := map[string]bool{}
	for _, e := range events {
		decided[e.pod.String()] = true
	}
	for _, p := range pods {
		ref := eviction.PodRef{Namespace: p.namespace, Name: p.name, Node: p.node}
		if slices.Contains(c.tainted, p.node) && !decided[ref.String()] {
			events = append(events, event{now: c.sim.clock.Now(), kind: kept, pod: ref})
		}
	}
	return events
}

// printPending writes the schedule the Manager holds (Manager.Pending).
func (c *cluster) printPending() {
	pending := c.sim.m.Pending()
	slices.SortFunc(pending, func(a, b eviction.Pending) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Pod.String(), b.Pod.String()))
	})
	var list []string
	for _, p := range pending {
		list = append(list, p.Pod.String()+" at "+since(p.At))
	}
	if len(list) == 0 {
		list = []string{"none"}
	}
	fmt.Fprintf(c.w, "%s    pending:   %s\n", since(c.sim.clock.Now()), strings.Join(list, ", "))
}

// printCluster writes the nodes and pods, with the tolerations that matter.
func (c *cluster) printCluster() {
	fmt.Fprintf(c.w, "Pods, and what they tolerate of %s:NoExecute:\n", unreachable)
	for _, n := range nodes {
		label := n.zone + "  " + n.name
		for _, p := range pods {
			if p.node == n.name {
				fmt.Fprintf(c.w, "  %-15s  %-16s  %s\n", label, p.namespace+"/"+p.name, p.about)
				label = ""
			}
		}
	}
	fmt.Fprintln(c.w)
}

// printSummary writes what was evicted, and what still runs, where.
func (c *cluster) printSummary() {
	now := c.sim.clock.Now()
	fmt.Fprintf(c.w, "\nSummary at %s:\n", since(now))
	fmt.Fprintf(c.w, "  evicted (%d):\n", len(c.evicted))
	for _, e := range c.evicted {
		fmt.Fprintf(c.w, "    %-16s  from %s at %s\n", e.pod, e.pod.Node, since(e.now))
	}
	var running, finished []string
	for _, n := range nodes {
		list, _ := c.sim.cache.PodsOnNode(n.name)
		slices.SortFunc(list, func(a, b *v1.Pod) int {
			return cmp.Compare(order[a.Namespace+"/"+a.Name], order[b.Namespace+"/"+b.Name])
		})
		for _, p := range list {
			line := fmt.Sprintf("    %-16s  on %s (%s)", p.Namespace+"/"+p.Name, n.name, n.zone)
			if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
				finished = append(finished, line)
			} else {
				running = append(running, line)
			}
		}
	}
	fmt.Fprintf(c.w, "  still running (%d):\n%s\n", len(running), strings.Join(running, "\n"))
	fmt.Fprintf(c.w, "  finished before the outage, left alone (%d):\n%s\n", len(finished), strings.Join(finished, "\n"))
}
