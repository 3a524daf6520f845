package main

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/taintevict/taintevict/eviction/engine"
)

// BenchmarkAdmitNode is the webhook's answer to a node update that adds a NoExecute taint,
// from informer caches holding 5,000 nodes and 150,000 pods (30 a node: a third tolerate
// nothing, a third 300 s, a third forever), with no budget and with the zone brake (which
// counts every node). One op is one AdmissionReview, decoded, simulated and answered.
func BenchmarkAdmitNode(b *testing.B) {
	inf, _ := syncedInformers(b, fake.NewClientset(), false)
	nodes, pods := inf.Nodes.GetStore(), inf.Pods.GetStore()
	for i := range 5000 {
		name := fmt.Sprintf("node-%04d", i)
		_ = nodes.Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3)}}})
		for j := range 30 {
			var tols []v1.Toleration
			switch j % 3 {
			case 1:
				tols = tolerating(ptr.To[int64](300))
			case 2:
				tols = tolerating(nil)
			}
			_ = pods.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", j%10), Name: fmt.Sprintf("p-%04d-%02d", i, j), UID: types.UID(fmt.Sprint(i, "-", j))},
				Spec: v1.PodSpec{NodeName: name, Tolerations: tols}})
		}
	}
	body := review(b, "nodes", "node-0000",
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0000"}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0000"}, Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: down, Effect: v1.TaintEffectNoExecute}}}})
	for _, bc := range []struct {
		name string
		opts engine.Options
	}{{"no budget", engine.Options{}}, {"zone brake", engine.Options{Brake: engine.Brake{ZoneFraction: 0.55}}}} {
		b.Run(bc.name, func(b *testing.B) {
			a := &admitter{node: &inf, nodeOpts: bc.opts, horizon: 24 * time.Hour, now: time.Now}
			for b.Loop() {
				r := admit(b, a, admitNodesPath, body)
				if len(r.Warnings) != 1 {
					b.Fatalf("warnings: %v", r.Warnings)
				}
			}
		})
	}
}
