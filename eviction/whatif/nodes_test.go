package whatif_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/whatif"
)

var start = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

const down = "example.com/down"

func node(name, zone string, taints ...v1.Taint) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: taints}}
	if zone != "" {
		n.Labels = map[string]string{v1.LabelTopologyZone: zone}
	}
	return n
}

func pod(ns, name, node string, tols ...v1.Toleration) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{NodeName: node, Tolerations: tols}}
}

func tol(key string, seconds *int64) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

func noExecute(key string, added *time.Time) v1.Taint {
	t := v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute}
	if added != nil {
		t.TimeAdded = &metav1.Time{Time: *added}
	}
	return t
}

// withGrace gives p a terminationGracePeriodSeconds of seconds.
func withGrace(p *v1.Pod, seconds int64) *v1.Pod {
	p.Spec.TerminationGracePeriodSeconds = &seconds
	return p
}

// owned makes p a pod of the StatefulSet web.
func owned(p *v1.Pod) *v1.Pod {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", Controller: ptr.To(true)}}
	return p
}

// fates returns the verdict and the time from start of each pod after the change, by
// name, as "Evicted+5s", "Stays", "Held", "Leaving".
func fates(res *whatif.Result) map[string]string {
	out := map[string]string{}
	for _, p := range res.Pods {
		s := string(p.After.Verdict)
		if p.After.Verdict == whatif.Evicted {
			s += "+" + p.After.At.Sub(res.Start).String()
		}
		out[p.Pod.Name] = s
	}
	return out
}

func TestNodes(t *testing.T) {
	ctx := context.Background()
	ago := start.Add(-100 * time.Second)
	tests := []struct {
		name   string
		nodes  []*v1.Node
		pods   []*v1.Pod
		change whatif.Change
		opts   engine.Options
		want   map[string]string
		// anyOrder: pods due at the same instant take a rate limit's slots in the order the
		// engine's act workers reach them, which no run fixes: only the slots are checked.
		anyOrder bool
	}{
		{
			name:  "a taint on one node",
			nodes: []*v1.Node{node("n1", ""), node("n2", "")},
			pods: []*v1.Pod{
				pod("a", "none", "n1"),
				pod("a", "ten", "n1", tol(down, ptr.To[int64](10))),
				pod("b", "forever", "n1", tol(down, nil)),
				pod("b", "other-node", "n2"),
			},
			change: whatif.Change{"n1": {noExecute(down, nil)}},
			want:   map[string]string{"none": "Evicted+0s", "ten": "Evicted+10s", "forever": "Stays"},
		},
		{
			name:  "a taint already there counts from its TimeAdded",
			nodes: []*v1.Node{node("n1", "", noExecute("old", &ago))},
			pods: []*v1.Pod{
				pod("a", "old-300-new-60", "n1", tol("old", ptr.To[int64](300)), tol(down, ptr.To[int64](60))),
				pod("a", "old-120", "n1", tol("old", ptr.To[int64](120)), tol(down, nil)),
			},
			change: whatif.Change{"n1": {noExecute("old", &ago), noExecute(down, nil)}},
			want:   map[string]string{"old-300-new-60": "Evicted+1m0s", "old-120": "Evicted+20s"},
		},
		{
			name:  "a pod that is leaving",
			nodes: []*v1.Node{node("n1", "")},
			pods: []*v1.Pod{
				func() *v1.Pod { p := pod("a", "done", "n1"); p.Status.Phase = v1.PodSucceeded; return p }(),
				func() *v1.Pod { p := pod("a", "going", "n1"); p.DeletionTimestamp = &metav1.Time{Time: ago}; return p }(),
			},
			change: whatif.Change{"n1": {noExecute(down, nil)}},
			want:   map[string]string{"done": "Leaving", "going": "Leaving"},
		},
		{
			name:     "a rate limit spaces the evictions",
			nodes:    []*v1.Node{node("n1", "")},
			pods:     []*v1.Pod{pod("a", "p1", "n1"), pod("a", "p2", "n1"), pod("a", "p3", "n1"), pod("a", "p4", "n1")},
			opts:     engine.Options{RateLimit: engine.Limit{PerSecond: 2, Burst: 1}},
			change:   whatif.Change{"n1": {noExecute(down, nil)}},
			want:     map[string]string{"p1": "Evicted+0s", "p2": "Evicted+500ms", "p3": "Evicted+1s", "p4": "Evicted+1.5s"},
			anyOrder: true,
		},
		{
			// The node is unreachable: no kubelet confirms a deletion, and each pod counts in
			// flight until the end of its grace period, its deletionTimestamp.
			name:  "InFlight lets the next go when the last is gone",
			nodes: []*v1.Node{node("n1", "")},
			pods: []*v1.Pod{
				withGrace(pod("a", "first", "n1"), 10),
				withGrace(pod("a", "second", "n1", tol(down, ptr.To[int64](1))), 20),
				withGrace(pod("a", "third", "n1", tol(down, ptr.To[int64](2))), 5),
			},
			opts:   engine.Options{InFlight: engine.InFlight{Max: 1}},
			change: whatif.Change{"n1": {noExecute(down, nil)}},
			want:   map[string]string{"first": "Evicted+0s", "second": "Evicted+10s", "third": "Evicted+30s"},
		},
		{
			name:  "NamespaceLimit and OwnerLimit space a namespace's and a workload's evictions",
			nodes: []*v1.Node{node("n1", "")},
			pods: []*v1.Pod{
				pod("a", "a1", "n1"), pod("a", "a2", "n1", tol(down, ptr.To[int64](1))), pod("a", "a3", "n1", tol(down, ptr.To[int64](2))),
				owned(pod("b", "web-1", "n1")), owned(pod("b", "web-2", "n1", tol(down, ptr.To[int64](1)))),
			},
			opts:   engine.Options{NamespaceLimit: engine.Window{Max: 2, Per: time.Minute}, OwnerLimit: engine.Window{Max: 1, Per: 30 * time.Second}},
			change: whatif.Change{"n1": {noExecute(down, nil)}},
			want: map[string]string{"a1": "Evicted+0s", "a2": "Evicted+1s", "a3": "Evicted+1m0s",
				"web-1": "Evicted+0s", "web-2": "Evicted+30s"},
		},
		{
			name:   "Confirm holds a taint that would evict too many",
			nodes:  []*v1.Node{node("n1", ""), node("n2", "")},
			pods:   []*v1.Pod{pod("a", "p1", "n1"), pod("a", "p2", "n1"), pod("a", "p3", "n2")},
			opts:   engine.Options{Confirm: engine.Confirm{Fraction: 0.5}},
			change: whatif.Change{"n1": {noExecute(down, nil)}},
			want:   map[string]string{"p1": "Held", "p2": "Held"},
		},
		{
			name:   "the zone brake holds a zone going down",
			nodes:  []*v1.Node{node("a1", "a"), node("a2", "a"), node("b1", "b")},
			pods:   []*v1.Pod{pod("x", "on-a1", "a1"), pod("x", "on-a2", "a2"), pod("x", "on-b1", "b1")},
			opts:   engine.Options{Brake: engine.Brake{ZoneFraction: 0.5}},
			change: whatif.Change{"a1": {noExecute(down, nil)}, "a2": {noExecute(down, nil)}},
			want:   map[string]string{"on-a1": "Held", "on-a2": "Held"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := whatif.Nodes(ctx, whatif.Cluster{Nodes: tc.nodes, Pods: whatif.NewIndex(tc.pods)}, tc.change,
				whatif.Options{Start: start, Engine: tc.opts})
			require.NoError(t, err)
			if tc.anyOrder {
				assert.ElementsMatch(t, slices.Collect(maps.Values(tc.want)), slices.Collect(maps.Values(fates(res))))
				return
			}
			assert.Equal(t, tc.want, fates(res))
		})
	}
}

// Removing a taint cancels the evictions it made due; one that another taint makes due stays.
func TestNodesRemove(t *testing.T) {
	ago := start.Add(-10 * time.Second)
	nodes := []*v1.Node{node("n1", "", noExecute(down, &ago), noExecute("other", &ago))}
	pods := []*v1.Pod{
		pod("a", "spared", "n1", tol(down, ptr.To[int64](60)), tol("other", nil)),
		pod("a", "still-going", "n1", tol(down, ptr.To[int64](60)), tol("other", ptr.To[int64](30))),
	}
	res, err := whatif.Nodes(context.Background(), whatif.Cluster{Nodes: nodes, Pods: whatif.NewIndex(pods)},
		whatif.Change{"n1": {noExecute("other", &ago)}}, whatif.Options{Start: start})
	require.NoError(t, err)
	require.NotNil(t, res.Before)
	got := map[string]string{}
	for _, p := range res.Pods {
		got[p.Pod.Name] = fmt.Sprintf("%s+%s -> %s", p.Before.Verdict, p.Before.At.Sub(start), p.After.Verdict)
		if p.After.Verdict == whatif.Evicted {
			got[p.Pod.Name] += "+" + p.After.At.Sub(start).String()
		}
	}
	assert.Equal(t, map[string]string{
		"spared":      "Evicted+50s -> Stays",
		"still-going": "Evicted+20s -> Evicted+20s",
	}, got)
	s := res.Summary()
	assert.Equal(t, 1, s.Cancelled)
	assert.Equal(t, 1, s.Unchanged)
	assert.Equal(t, "evicts no pod; cancels the eviction of 1 pod", s.String())
}

func TestNodesBadInput(t *testing.T) {
	ctx := context.Background()
	cluster := whatif.Cluster{Nodes: []*v1.Node{node("n1", "")}, Pods: whatif.NewIndex(nil)}
	for _, tc := range []struct {
		name    string
		cluster whatif.Cluster
		change  whatif.Change
		opts    whatif.Options
		want    string
	}{
		{"no start", cluster, whatif.Change{"n1": nil}, whatif.Options{}, "whatif: Options.Start is zero"},
		{"unknown node", cluster, whatif.Change{"nope": nil}, whatif.Options{Start: start}, `whatif: node "nope" not found`},
		{"no pods", whatif.Cluster{Nodes: cluster.Nodes}, whatif.Change{"n1": nil}, whatif.Options{Start: start}, "whatif: Cluster.Pods is nil"},
		{"bad options", cluster, whatif.Change{"n1": nil}, whatif.Options{Start: start, Engine: engine.Options{Brake: engine.Brake{Fraction: 2}}}, "Brake.Fraction must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := whatif.Nodes(ctx, tc.cluster, tc.change, tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The summary says what Confirm holds apart from what the brake holds.
func TestNodesSummaryUnconfirmed(t *testing.T) {
	pods := []*v1.Pod{pod("a", "p1", "n1"), pod("a", "p2", "n1"), pod("a", "p3", "n2")}
	res, err := whatif.Nodes(context.Background(), whatif.Cluster{Nodes: []*v1.Node{node("n1", ""), node("n2", "")}, Pods: whatif.NewIndex(pods)},
		whatif.Change{"n1": {noExecute(down, nil)}}, whatif.Options{Start: start, Engine: engine.Options{Confirm: engine.Confirm{Fraction: 0.5}}})
	require.NoError(t, err)
	for _, p := range res.Pods {
		assert.Equal(t, engine.ReasonUnconfirmed, p.After.Delayed, p.Pod.Name)
	}
	s := res.Summary()
	assert.Equal(t, 2, s.Unconfirmed)
	assert.Equal(t, 0, s.Held)
	assert.Equal(t, "evicts no pod; 2 pods held until an operator confirms the taint", s.String())
}
