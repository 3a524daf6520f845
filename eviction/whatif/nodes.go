package whatif

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// Pods looks up pods, as an [eviction.Cache] does (which satisfies it): the informers'
// cache of a controller, or an [Index] of a pod list. A lookup of a pod that does not
// exist returns nil and a nil error, or a NotFound error.
type Pods interface {
	PodsOnNode(node string) ([]*v1.Pod, error)
	Pod(namespace, name string) (*v1.Pod, error)
}

// Cluster is the state a what-if about nodes starts from.
type Cluster struct {
	// Nodes are every node of the cluster as it is now. The brake counts them; the pods of
	// those that carry NoExecute taints are simulated too, since the controller has their
	// evictions in hand and they take the same rate limits' tokens.
	Nodes []*v1.Node
	// Pods are the cluster's pods.
	Pods Pods
}

// Change is a hypothetical change of the cluster: for each node named, the taints it would
// carry (all of them, as they would be in its spec). A taint without TimeAdded counts from
// the simulation's start, as the controller counts one it sees for the first time. A node
// that is not in the cluster is an error.
type Change map[string][]v1.Taint

// Options configures a what-if about nodes.
type Options struct {
	// Start is the simulation's "now": when the change is made. It must be set: the
	// package never reads a clock.
	Start time.Time
	// Engine is the options of the controller whose behaviour is simulated: its budgets
	// (RateLimit, TaintRateLimits, Brake), Tolerations and DeadlineSource. Clock, DryRun and
	// Observer are the simulation's; the rest (workers, backoff, Actuator timeouts) change
	// no verdict. Pauser, if set, is asked as the controller would ask it.
	Engine engine.Options
	// Until is the simulation's horizon: evictions due later are reported Pending at their
	// deadline, not stepped to. Zero means [End]. A rate limit over many evictions costs a
	// step per slot: a bound keeps an answer quick (the admission webhook's).
	Until time.Time
}

// PodFate is the what-if of one pod on a changed node: what the engine does with it with
// the nodes as they are (Before) and as the change makes them (After), and why.
type PodFate struct {
	Pod *v1.Pod
	// Before is the pod's fate with its node as it is; After with the change.
	Before, After Fate
	// Why is the NoExecute taints of its node after the change, each with the toleration
	// that decides it (see [Why]).
	Why []Match
	// Zone is its node's topology.kubernetes.io/zone label, "" when it has none.
	Zone string
}

// Key returns the pod's namespace and name.
func (p PodFate) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: p.Pod.Namespace, Name: p.Pod.Name}
}

// Changed reports whether the change changes what happens to the pod: its verdict, or
// when it is evicted.
func (p PodFate) Changed() bool {
	return p.Before.Verdict != p.After.Verdict || !p.Before.At.Equal(p.After.At)
}

// Result is a what-if about nodes: the fate of every pod on a changed node, earliest
// eviction first (pods that stay last), ties by namespace and name.
type Result struct {
	Start time.Time
	// Nodes are the changed nodes, as the change makes them, by name.
	Nodes []*v1.Node
	Pods  []PodFate
	// Before and After are the engine's timelines, of the pods on every tainted node. Before
	// is nil when no changed node carried a NoExecute taint before the change: then every
	// pod of a changed node stayed.
	Before, After *Timeline
}

// Nodes simulates change on cluster with the engine itself: an [eviction.Manager] in dry
// run, fed the nodes as the change makes them, on a fake clock stepped from opts.Start to
// each deadline (see [Simulate]). When a changed node already carries NoExecute taints, it
// also simulates the cluster as it is, so that each pod's fate before the change is known
// (what the change cancels, or brings forward). Every pod on a changed node is in the
// result, with its fate before and after and the why of the after. A change that changes
// no NoExecute taint simulates the cluster as it is, once: the fates of the pods of the
// named nodes, to explain them.
//
// It fails on a zero opts.Start, a node of change that is not in cluster.Nodes, invalid
// engine options, and a failing pod lookup; the error starts with "whatif:". It blocks
// until the simulation ends or ctx is done.
func Nodes(ctx context.Context, cluster Cluster, change Change, opts Options) (*Result, error) {
	if opts.Start.IsZero() {
		return nil, errors.New("whatif: Options.Start is zero")
	}
	if cluster.Pods == nil {
		return nil, errors.New("whatif: Cluster.Pods is nil")
	}
	now := make(map[string]*v1.Node, len(cluster.Nodes))
	for _, n := range cluster.Nodes {
		if n != nil {
			now[n.Name] = n
		}
	}
	after := make(map[string]*v1.Node, len(change))
	var changed []*v1.Node
	wasTainted, anyChanged := false, false
	for _, name := range slices.Sorted(maps.Keys(change)) {
		n := now[name]
		if n == nil {
			return nil, fmt.Errorf("whatif: node %q not found", name)
		}
		c := n.DeepCopy()
		c.Spec.Taints = slices.Clone(change[name])
		after[name] = c
		changed = append(changed, c)
		if engine.TaintsChanged(n.Spec.Taints, c.Spec.Taints) {
			anyChanged = true
			wasTainted = wasTainted || len(tolerations.NoExecuteTaints(n.Spec.Taints)) > 0
		}
	}
	res := &Result{Start: opts.Start, Nodes: changed}
	var err error
	if res.After, err = simulateNodes(ctx, cluster, after, opts); err != nil {
		return nil, err
	}
	switch {
	case !anyChanged:
		res.Before = res.After // no change: the cluster as it is (an explanation)
	case wasTainted:
		if res.Before, err = simulateNodes(ctx, cluster, nil, opts); err != nil {
			return nil, err
		}
	}
	podsOn := make([][]*v1.Pod, len(changed))
	total := 0
	for i, n := range changed {
		pods, err := cluster.Pods.PodsOnNode(n.Name)
		if err != nil {
			return nil, fmt.Errorf("whatif: pods on node %s: %w", n.Name, err)
		}
		podsOn[i], total = pods, total+len(pods)
	}
	res.Pods = make([]PodFate, 0, total)
	for i, n := range changed {
		pods := podsOn[i]
		why := func(p *v1.Pod) []Match {
			return Why(n.Spec.Taints, p.Spec.Tolerations, opts.Start, opts.Engine.DeadlineSource, opts.Engine.Tolerations)
		}
		for _, p := range pods {
			if p == nil || p.Spec.NodeName != n.Name {
				continue
			}
			pf := PodFate{Pod: p, Why: why(p), Zone: zoneOf(n)}
			pf.Before, pf.After = fateOf(res.Before, p), fateOf(res.After, p)
			res.Pods = append(res.Pods, pf)
		}
	}
	sortPods(res.Pods)
	return res, nil
}

// simulateNodes runs the Manager in dry run over cluster with the nodes of after in place of
// theirs.
func simulateNodes(ctx context.Context, cluster Cluster, after map[string]*v1.Node, opts Options) (*Timeline, error) {
	nodes := make([]*v1.Node, 0, len(cluster.Nodes))
	byName := make(map[string]*v1.Node, len(cluster.Nodes))
	for _, n := range cluster.Nodes {
		if n == nil {
			continue
		}
		if a := after[n.Name]; a != nil {
			n = a
		}
		byName[n.Name] = n
		// Without a brake, an untainted node changes nothing: the engine would look at it
		// and pass on.
		if opts.Engine.Brake != (engine.Brake{}) || len(tolerations.NoExecuteTaints(n.Spec.Taints)) > 0 {
			nodes = append(nodes, n)
		}
	}
	cache := nodeCache{Pods: cluster.Pods, nodes: byName}
	return Simulate(ctx, opts.Start, opts.Until, opts.Engine, func(eo engine.Options) (Engine, error) {
		m, err := eviction.New(nil, cache, eo)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			m.NodeUpdated(nil, n)
		}
		return m, nil
	})
}

// nodeCache is the simulation's [eviction.Cache]: the cluster's pods, and its nodes as the
// change makes them.
type nodeCache struct {
	Pods
	nodes map[string]*v1.Node
}

func (c nodeCache) Node(name string) (*v1.Node, error) { return c.nodes[name], nil }

// fateOf returns the pod's fate in tl: Stays if the engine never reported about it (or tl
// is nil), and Leaving, with the pod's reason, for a pod that is leaving on its own and
// that the engine therefore never reports about.
func fateOf(tl *Timeline, p *v1.Pod) Fate {
	f := Fate{Verdict: Stays}
	if tl != nil {
		if got, ok := tl.Fates[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]; ok {
			f = got
		}
	}
	if r := eviction.LeavingReason(p); r != "" && f.Verdict == Stays {
		f = Fate{Verdict: Leaving, Reason: r}
	}
	return f
}

// sortPods orders pods by their fate after the change, earliest eviction first, those
// that stay last, ties by namespace and name. It sorts small keys and moves each PodFate
// once: swapping the large structs themselves took most of the time at 150,000 pods.
func sortPods(pods []PodFate) {
	type key struct {
		at       int64 // unix nanoseconds; math.MaxInt64 for no time
		ns, name string
		i        int
	}
	keys := make([]key, len(pods))
	for i, p := range pods {
		at := int64(math.MaxInt64)
		if !p.After.At.IsZero() {
			at = p.After.At.UnixNano()
		}
		keys[i] = key{at: at, ns: p.Pod.Namespace, name: p.Pod.Name, i: i}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.at, b.at), strings.Compare(a.ns, b.ns), strings.Compare(a.name, b.name))
	})
	sorted := make([]PodFate, len(pods))
	for i, k := range keys {
		sorted[i] = pods[k.i]
	}
	copy(pods, sorted)
}
