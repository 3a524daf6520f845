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

// Pods looks up pods, as an [eviction.Cache] does (the informers' cache of a controller),
// or an [Index] of a pod list. A pod that does not exist is nil, or a NotFound error.
type Pods interface {
	PodsOnNode(node string) ([]*v1.Pod, error)
	Pod(namespace, name string) (*v1.Pod, error)
}

// Cluster is the state a what-if about nodes starts from.
type Cluster struct {
	// Nodes are every node of the cluster as it is now. The pods of those that carry
	// NoExecute taints are simulated too: they take the same budgets.
	Nodes []*v1.Node
	// Pods are the cluster's pods.
	Pods Pods
}

// Change is a hypothetical change: for each node named (of the cluster), all the taints it
// would carry. A taint without TimeAdded counts from the start, the engine's first sight.
type Change map[string][]v1.Taint

// Options configures a what-if about nodes.
type Options struct {
	// Start is the simulation's "now", when the change is made; it must be set.
	Start time.Time
	// Engine is the options of the controller simulated (Clock, ActTimeout and Observer
	// are the simulation's). No target is re-created, so LoopDamping damps none.
	Engine engine.Options
	// Until is the simulation's horizon: evictions due later are reported Pending, not
	// stepped to. Zero means [End]. A rate limit costs a step per slot: a bound keeps an
	// answer quick.
	Until time.Time
}

// PodFate is the what-if of one pod on a changed node: its fates before and after the
// change; the [Why] of its node's NoExecute taints after it; its node's zone label.
type PodFate struct {
	Pod           *v1.Pod
	Before, After Fate
	Why           []Match
	Zone          string
}

// Key returns the pod's namespace and name.
func (p PodFate) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: p.Pod.Namespace, Name: p.Pod.Name}
}

// Changed reports whether the change changes the pod's verdict or time.
func (p PodFate) Changed() bool { return changed(p.Before, p.After) }

// changed reports whether two fates differ in verdict or time.
func changed(a, b Fate) bool { return a.Verdict != b.Verdict || !a.At.Equal(b.At) }

// Result is a what-if about nodes: the changed nodes, by name; the fate of every pod on
// one, earliest eviction first (those that stay last), ties by key; the engine's timelines
// (Before nil when no changed node carried a NoExecute taint before the change).
type Result struct {
	Start         time.Time
	Nodes         []*v1.Node
	Pods          []PodFate
	Before, After *Timeline
}

// Nodes simulates change on cluster with an [eviction.Manager] (see [Simulate]) and, when
// a changed node already carries NoExecute taints, the cluster as it is, for each pod's
// fate before the change. A change of no NoExecute taint simulates the cluster as it is,
// once: an explanation.
//
// It fails on a zero opts.Start, a node of change not in cluster.Nodes, invalid engine
// options, and a failing pod lookup. It blocks until the simulation ends or ctx is done.
func Nodes(ctx context.Context, cluster Cluster, change Change, opts Options) (*Result, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if cluster.Pods == nil {
		return nil, errors.New("whatif: Cluster.Pods is nil")
	}
	after, changed, anyChanged, wasTainted, err := applyChange(cluster.Nodes, change)
	if err != nil {
		return nil, err
	}
	res := &Result{Start: opts.Start, Nodes: changed}
	res.Before, res.After, err = beforeAfter(anyChanged, wasTainted,
		func() (*Timeline, error) { return simulateNodes(ctx, cluster, nil, opts) },
		func() (*Timeline, error) { return simulateNodes(ctx, cluster, after, opts) })
	if err != nil {
		return nil, err
	}
	for _, n := range changed {
		pods, err := cluster.Pods.PodsOnNode(n.Name)
		if err != nil {
			return nil, fmt.Errorf("whatif: pods on node %s: %w", n.Name, err)
		}
		for _, p := range pods {
			if p == nil || p.Spec.NodeName != n.Name {
				continue
			}
			key, leaving := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, eviction.LeavingReason(p)
			res.Pods = append(res.Pods, PodFate{Pod: p, Zone: zoneOf(n), Before: fateIn(res.Before, key, leaving), After: fateIn(res.After, key, leaving),
				Why: Why(n.Spec.Taints, p.Spec.Tolerations, opts.Start, opts.Engine.DeadlineSource, opts.Engine.Tolerations)})
		}
	}
	sortFates(res.Pods, func(p *PodFate) (Fate, types.NamespacedName) { return p.After, p.Key() })
	return res, nil
}

// applyChange returns the nodes of change as it makes them, by name and in name order,
// whether it changes any NoExecute taint, and whether a node it changes carried one.
func applyChange(nodes []*v1.Node, change Change) (map[string]*v1.Node, []*v1.Node, bool, bool, error) {
	now := make(map[string]*v1.Node, len(nodes))
	for _, n := range nodes {
		if n != nil {
			now[n.Name] = n
		}
	}
	after := make(map[string]*v1.Node, len(change))
	var changed []*v1.Node
	anyChanged, wasTainted := false, false
	for _, name := range slices.Sorted(maps.Keys(change)) {
		n := now[name]
		if n == nil {
			return nil, nil, false, false, fmt.Errorf("whatif: node %q not found", name)
		}
		c := n.DeepCopy()
		c.Spec.Taints = slices.Clone(change[name])
		after[name], changed = c, append(changed, c)
		if engine.TaintsChanged(n.Spec.Taints, c.Spec.Taints) {
			anyChanged = true
			wasTainted = wasTainted || len(tolerations.NoExecuteTaints(n.Spec.Taints)) > 0
		}
	}
	return after, changed, anyChanged, wasTainted, nil
}

// beforeAfter returns the timelines of a what-if, simBefore's and simAfter's: after alone
// when nothing was tainted before, and one for both when nothing changes.
func beforeAfter(changed, wasTainted bool, simBefore, simAfter func() (*Timeline, error)) (before, after *Timeline, err error) {
	if after, err = simAfter(); err != nil {
		return nil, nil, err
	}
	switch {
	case !changed:
		return after, after, nil
	case wasTainted:
		if before, err = simBefore(); err != nil {
			return nil, nil, err
		}
	}
	return before, after, nil
}

// check checks what every what-if needs.
func (o Options) check() error {
	if o.Start.IsZero() {
		return errors.New("whatif: Options.Start is zero")
	}
	return nil
}

// simulateNodes runs the Manager over cluster with the nodes of after in place of theirs.
func simulateNodes(ctx context.Context, cluster Cluster, after map[string]*v1.Node, opts Options) (*Timeline, error) {
	nodes := make([]*v1.Node, 0, len(cluster.Nodes))
	byName := make(map[string]*v1.Node, len(cluster.Nodes))
	counts := opts.Engine.Brake != (engine.Brake{}) || opts.Engine.Confirm.Fraction > 0 // every node
	for _, n := range cluster.Nodes {
		if n == nil {
			continue
		}
		if a := after[n.Name]; a != nil {
			n = a
		}
		byName[n.Name] = n
		if counts || len(tolerations.NoExecuteTaints(n.Spec.Taints)) > 0 {
			nodes = append(nodes, n)
		}
	}
	cache := &nodeCache{Pods: cluster.Pods, nodes: byName, gone: &goneSet{}}
	return Simulate(ctx, opts.Start, opts.Until, opts.Engine, func(eo engine.Options, act engine.Actuator) (Engine, error) {
		m, err := eviction.New(eviction.DeleterFunc(act.Act), cache, eo)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			m.NodeUpdated(nil, n)
			if opts.Engine.Confirm.Fraction == 0 {
				continue // else its census counts the pods it is told of
			}
			pods, err := cache.PodsOnNode(n.Name)
			if err != nil {
				return nil, fmt.Errorf("pods on node %s: %w", n.Name, err)
			}
			for _, p := range pods {
				m.PodUpdated(nil, p)
			}
		}
		m.Synced() // it was told every node that counts
		return nodeSim{Manager: m, cache: cache}, nil
	})
}

// nodeCache is the simulation's [eviction.Cache]: the cluster's pods but those gone (its
// lists, read only before the simulation starts, still hold them), and its nodes as the
// change makes them.
type nodeCache struct {
	Pods
	nodes map[string]*v1.Node
	gone  *goneSet
}

func (c *nodeCache) Node(name string) (*v1.Node, error) { return c.nodes[name], nil }

func (c *nodeCache) Pod(namespace, name string) (*v1.Pod, error) {
	if c.gone.has(types.NamespacedName{Namespace: namespace, Name: name}) {
		return nil, nil
	}
	return c.Pods.Pod(namespace, name)
}

// fateIn returns the fate of key in tl (nil: Stays), Leaving when leaving is set and it
// stays.
func fateIn(tl *Timeline, key types.NamespacedName, leaving engine.Reason) Fate {
	f := Fate{Verdict: Stays}
	if tl != nil {
		if got, ok := tl.Fates[key]; ok {
			f = got
		}
	}
	if leaving != "" && f.Verdict == Stays {
		f = Fate{Verdict: Leaving, Reason: leaving}
	}
	return f
}

// sortFates orders xs by the At of their fate after the change, those without one (they
// stay) last, ties by namespace and name. It sorts small keys and moves each element once:
// swapping large structs is slow at 150,000 pods.
func sortFates[X any](xs []X, after func(*X) (Fate, types.NamespacedName)) {
	type key struct {
		at  int64 // unix nanoseconds; math.MaxInt64 for no time
		key types.NamespacedName
		i   int
	}
	keys := make([]key, len(xs))
	for i := range xs {
		f, k := after(&xs[i])
		at := int64(math.MaxInt64)
		if !f.At.IsZero() {
			at = f.At.UnixNano()
		}
		keys[i] = key{at: at, key: k, i: i}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.at, b.at), strings.Compare(a.key.Namespace, b.key.Namespace), strings.Compare(a.key.Name, b.key.Name))
	})
	sorted := make([]X, len(xs))
	for i, k := range keys {
		sorted[i] = xs[k.i]
	}
	copy(xs, sorted)
}
