package whatif_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/whatif"
)

// benchCluster is 5,000 nodes in 3 zones of 30 pods each (150,000 pods): of each node's
// pods, a third tolerates nothing, a third tolerates down for 300 s, a third forever.
func benchCluster() ([]*v1.Node, []*v1.Pod) {
	var nodes []*v1.Node
	var pods []*v1.Pod
	for i := range 5000 {
		n := node(fmt.Sprintf("node-%04d", i), fmt.Sprintf("zone-%d", i%3))
		nodes = append(nodes, n)
		for j := range 30 {
			var tols []v1.Toleration
			switch j % 3 {
			case 1:
				tols = []v1.Toleration{tol(down, ptr.To[int64](300))}
			case 2:
				tols = []v1.Toleration{tol(down, nil)}
			}
			pods = append(pods, pod(fmt.Sprintf("ns-%d", j%10), fmt.Sprintf("p-%04d-%02d", i, j), n.Name, tols...))
		}
	}
	return nodes, pods
}

// BenchmarkNodes is the what-if of a taint on one node, on a zone (a third of the nodes)
// and on every node, of a cluster of 5,000 nodes and 150,000 pods, with the pods indexed
// (NewIndex, part of each op: a plugin makes it from its list) or read from a cache made
// before (a controller's informers).
func BenchmarkNodes(b *testing.B) {
	nodes, pods := benchCluster()
	taint := []v1.Taint{noExecute(down, nil)}
	changes := map[string]whatif.Change{"one node": {nodes[0].Name: taint}, "zone": {}, "all": {}}
	for i, n := range nodes {
		if i%3 == 0 {
			changes["zone"][n.Name] = taint
		}
		changes["all"][n.Name] = taint
	}
	for _, name := range []string{"one node", "zone", "all"} {
		for _, brake := range []bool{false, true} {
			opts := whatif.Options{Start: start}
			label := name
			if brake {
				opts.Engine.Brake = engine.Brake{ZoneFraction: 0.9}
				label += "/zone brake"
			}
			b.Run(label, func(b *testing.B) {
				var res *whatif.Result
				for b.Loop() {
					var err error
					res, err = whatif.Nodes(context.Background(), whatif.Cluster{Nodes: nodes, Pods: whatif.NewIndex(pods)}, changes[name], opts)
					if err != nil {
						b.Fatal(err)
					}
				}
				s := res.Summary()
				b.ReportMetric(float64(s.Pods), "pods")
				b.ReportMetric(float64(s.Now), "now")
			})
		}
	}
}
