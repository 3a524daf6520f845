package whatif_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
	"github.com/taintevict/taintevict/eviction/whatif"
)

// The what-if of a random cluster agrees, pod by pod and to the nanosecond, with a Manager
// that really deletes (through a recording Deleter) on the changed cluster, on a fake clock
// stepped by the test in small steps: the same pods, at the same times. With budgets, the
// same pods and the same slots. The simulation's stepping, recording and collecting are
// what is tested; the rules are the engine's on both sides.
func TestNodesAgreeWithManager(t *testing.T) {
	budgets := map[string]engine.Options{
		"none":            {},
		"rate limit":      {RateLimit: engine.Limit{PerSecond: 5, Burst: 3}},
		"taint rate":      {TaintRateLimits: map[string]engine.Limit{down: {PerSecond: 2, Burst: 1}}},
		"in flight":       {InFlight: engine.InFlight{Max: 2}},
		"in flight share": {InFlight: engine.InFlight{Fraction: 0.2}},
		"namespace limit": {NamespaceLimit: engine.Window{Max: 2, Per: 10 * time.Second}},
		"owner limit":     {OwnerLimit: engine.Window{Max: 1, Per: 20 * time.Second}},
		"confirm":         {Confirm: engine.Confirm{Fraction: 0.2}},
	}
	for name, opts := range budgets {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%s/seed %d", name, seed), func(t *testing.T) {
				nodes, pods, change := randomCluster(rand.New(rand.NewPCG(seed, 1)))
				res, err := whatif.Nodes(context.Background(), whatif.Cluster{Nodes: nodes, Pods: whatif.NewIndex(pods)}, change,
					whatif.Options{Start: start, Engine: opts})
				require.NoError(t, err)
				// Every pod the engine evicts, on the changed nodes and on those tainted before.
				predicted := map[string]time.Duration{}
				for key, f := range res.After.Fates {
					if f.Verdict == whatif.Evicted {
						predicted[key.String()] = f.At.Sub(start)
					}
				}
				for _, p := range res.Pods {
					if p.After.Verdict == whatif.Evicted {
						assert.Equal(t, p.After.At.Sub(start), predicted[p.Key().String()], "pod %s", p.Key())
					}
				}
				if reason := budgetReason[name]; reason != "" {
					assert.True(t, slices.ContainsFunc(slices.Collect(maps.Values(res.After.Fates)), func(f whatif.Fate) bool { return f.Delayed == reason }),
						"the budget delays some pod: %s", reason)
				}
				got := realRun(t, nodes, pods, change, opts)
				for k, f := range res.After.Fates {
					if _, ok := got[k.String()]; ok && f.Verdict != whatif.Evicted {
						t.Logf("%s: %+v (steps %d, end %s)", k, f, res.After.Steps, res.After.End)
					}
				}
				if name == "none" || name == "confirm" {
					assert.Equal(t, predicted, got)
					return
				}
				// Evictions due at the same instant take a budget's slots in the order the
				// engine's workers reach them, which no run fixes: the same pods go, and the
				// slots are the same, but which pod takes which slot may differ. (The pods'
				// grace periods are the same, so that which departs first does not matter.)
				assert.ElementsMatch(t, slices.Collect(maps.Keys(predicted)), slices.Collect(maps.Keys(got)), "the pods evicted")
				assert.Equal(t, sortedValues(predicted), sortedValues(got), "the times of the evictions")
			})
		}
	}
}

// budgetReason is the reason each budget of TestNodesAgreeWithManager delays pods with.
var budgetReason = map[string]engine.Reason{"rate limit": engine.ReasonRateLimited, "taint rate": engine.ReasonRateLimited,
	"in flight": engine.ReasonInFlight, "in flight share": engine.ReasonInFlight, "namespace limit": engine.ReasonNamespaceLimit, "owner limit": engine.ReasonOwnerLimit,
	"confirm": engine.ReasonUnconfirmed}

func sortedValues(m map[string]time.Duration) []time.Duration {
	return slices.Sorted(maps.Values(m))
}

// randomCluster makes 6 nodes of 8 pods with random tolerations of down and of "old", a
// taint some nodes carry already, and a change that taints half the nodes with down.
func randomCluster(r *rand.Rand) ([]*v1.Node, []*v1.Pod, whatif.Change) {
	secs := []*int64{nil, ptr.To[int64](0), ptr.To[int64](5), ptr.To[int64](30), ptr.To[int64](300)}
	var nodes []*v1.Node
	var pods []*v1.Pod
	change := whatif.Change{}
	for i := range 6 {
		name := fmt.Sprintf("n%d", i)
		var taints []v1.Taint
		if r.IntN(3) == 0 {
			added := start.Add(-time.Duration(r.IntN(60)) * time.Second)
			taints = append(taints, noExecute("old", &added))
		}
		nodes = append(nodes, node(name, fmt.Sprintf("z%d", i%2), taints...))
		if i%2 == 0 {
			change[name] = append(append([]v1.Taint(nil), taints...), noExecute(down, nil))
		}
		for j := range 8 {
			var tols []v1.Toleration
			for _, key := range []string{down, "old"} {
				if r.IntN(3) > 0 {
					tols = append(tols, tol(key, secs[r.IntN(len(secs))]))
				}
			}
			r.Shuffle(len(tols), func(a, b int) { tols[a], tols[b] = tols[b], tols[a] })
			p := pod(fmt.Sprintf("ns%d", j%3), fmt.Sprintf("p%d-%d", i, j), name, tols...)
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](7)
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: fmt.Sprint("set-", j%4), Controller: ptr.To(true)}}
			pods = append(pods, p)
		}
	}
	return nodes, pods, change
}

// realRun runs a Manager that deletes for real on a fake clock, started at start on the
// cluster as the change makes it (as the what-if's engine is); it steps the clock and
// returns when each pod was deleted, from start. A deleted pod is gone at once, or, with
// InFlight, at the end of its grace period, as on a node whose kubelet never confirms.
func realRun(t *testing.T, nodes []*v1.Node, pods []*v1.Pod, change whatif.Change, opts engine.Options) map[string]time.Duration {
	t.Helper()
	clk := testclock.NewFakeClock(start)
	cache := &evictiontest.Cache{}
	for _, n := range nodes {
		if taints, ok := change[n.Name]; ok {
			n = n.DeepCopy()
			n.Spec.Taints = taints
		}
		cache.SetNode(n)
	}
	for _, p := range pods {
		cache.SetPod(p)
	}
	var mu sync.Mutex
	got := map[string]time.Duration{}
	goneAt := map[eviction.PodRef]time.Time{}
	var m *eviction.Manager
	gone := func(ref eviction.PodRef) {
		if old := cache.DeletePod(ref.Namespace, ref.Name); old != nil {
			m.PodUpdated(old, nil)
		}
	}
	deleter := &evictiontest.Deleter{Func: func(_ context.Context, ref eviction.PodRef) error {
		mu.Lock()
		defer mu.Unlock()
		got[ref.String()] = clk.Now().Sub(start)
		if opts.InFlight == (engine.InFlight{}) {
			gone(ref)
		} else if p, _ := cache.Pod(ref.Namespace, ref.Name); p != nil {
			goneAt[ref] = clk.Now().Add(time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second)
		}
		return nil
	}}
	opts.Clock = clk
	m, err := eviction.New(deleter, cache, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for _, n := range nodes {
		n, _ := cache.Node(n.Name)
		m.NodeUpdated(nil, n)
	}
	for _, p := range pods {
		m.PodUpdated(nil, p)
	}
	// Every deadline is a whole second and every slot a multiple of 200 ms or 500 ms (the
	// limits above): steps of 100 ms see each at its time. The last deadline is at most
	// 300 s after the start.
	for step := time.Duration(0); step <= 400*time.Second; step += 100 * time.Millisecond {
		clk.SetTime(start.Add(step))
		mu.Lock()
		for ref, at := range goneAt {
			if !at.After(clk.Now()) {
				delete(goneAt, ref)
				gone(ref)
			}
		}
		mu.Unlock()
		require.NoError(t, m.WaitIdle(ctx))
	}
	require.NoError(t, m.WaitIdle(ctx))
	mu.Lock()
	defer mu.Unlock()
	return got
}
