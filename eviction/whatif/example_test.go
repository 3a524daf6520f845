package whatif_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/whatif"
)

// What would a NoExecute taint on node-1 do?
func ExampleNodes() {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}}
	tolerate := func(seconds *int64) []v1.Toleration {
		return []v1.Toleration{{Key: "example.com/down", Operator: v1.TolerationOpExists,
			Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds}}
	}
	var pods []*v1.Pod
	for _, p := range []struct {
		name string
		tols []v1.Toleration
	}{{"web", nil}, {"db", tolerate(ptr.To[int64](300))}, {"agent", tolerate(nil)}} {
		pods = append(pods, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: p.name},
			Spec: v1.PodSpec{NodeName: "node-1", Tolerations: p.tols}})
	}

	res, err := whatif.Nodes(context.Background(),
		whatif.Cluster{Nodes: nodes, Pods: whatif.NewIndex(pods)},
		whatif.Change{"node-1": {{Key: "example.com/down", Effect: v1.TaintEffectNoExecute}}},
		whatif.Options{Start: now})
	if err != nil {
		panic(err)
	}
	for _, p := range res.Pods {
		switch p.After.Verdict {
		case whatif.Evicted:
			at, due := p.After.At.Sub(now), p.After.Deadline.Sub(now)
			fmt.Printf("%-6s goes at +%s (due at +%s)\n", p.Pod.Name, at, due)
		default:
			fmt.Printf("%-6s %s\n", p.Pod.Name, p.After.Verdict)
		}
	}
	fmt.Println(res.Summary())
	// Output:
	// web    goes at +0s (due at +0s)
	// db     goes at +5m0s (due at +5m0s)
	// agent  Stays
	// evicts 1 pod now (1 namespace), 1 more within 5m0s; 1 tolerates it forever
}

// A zone brake of 50% holds the evictions of a zone that loses two of its three nodes.
func ExampleNodes_brake() {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	var nodes []*v1.Node
	var pods []*v1.Pod
	for _, name := range []string{"a-1", "a-2", "a-3"} {
		zone := map[string]string{v1.LabelTopologyZone: "zone-a"}
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: zone}})
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-on-" + name}}
		pod.Spec.NodeName = name
		pods = append(pods, pod)
	}
	unreachable := []v1.Taint{{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}}
	res, err := whatif.Nodes(context.Background(),
		whatif.Cluster{Nodes: nodes, Pods: whatif.NewIndex(pods)},
		whatif.Change{"a-1": unreachable, "a-2": unreachable},
		whatif.Options{Start: now, Engine: engine.Options{Brake: engine.Brake{ZoneFraction: 0.5}}})
	if err != nil {
		panic(err)
	}
	for _, p := range res.Pods {
		fmt.Println(p.Pod.Name, p.After.Verdict, p.After.Delayed)
	}
	fmt.Println(res.Summary())
	// Output:
	// web-on-a-1 Held Paused
	// web-on-a-2 Held Paused
	// evicts no pod; the brake would hold 2 pods in zone zone-a
}

// At most one eviction in flight, on a node that is unreachable: no kubelet confirms a
// deletion, so each pod counts until the end of its grace period, and the next goes then.
func ExampleNodes_inFlight() {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}}
	var pods []*v1.Pod
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		pods = append(pods, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: v1.PodSpec{NodeName: "node-1", TerminationGracePeriodSeconds: ptr.To[int64](30)}})
	}
	res, err := whatif.Nodes(context.Background(),
		whatif.Cluster{Nodes: nodes, Pods: whatif.NewIndex(pods)},
		whatif.Change{"node-1": {{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}}},
		whatif.Options{Start: now, Engine: engine.Options{InFlight: engine.InFlight{Max: 1}}})
	if err != nil {
		panic(err)
	}
	for _, p := range res.Pods {
		fmt.Printf("a pod goes at +%s\n", p.After.At.Sub(now))
	}
	fmt.Println(res.Summary())
	// Output:
	// a pod goes at +0s
	// a pod goes at +30s
	// a pod goes at +1m0s
	// evicts 1 pod now (1 namespace), 2 more within 1m0s
}
