package main

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/taintevict/taintevict/eviction/engine"
)

// BenchmarkWhatIf is the what-if of a cluster of 5,000 nodes in 3 zones and 150,000 pods
// (30 a node: a third tolerate the unreachable taint for nothing, a third for 300 s, a
// third forever), held by a fake clientset: one op is what the command does after the
// lists have arrived (listed once, before the timer), the simulation, the report and its
// output (to io.Discard): for one node, one zone (a third of the cluster), and every node,
// as a table and as JSON.
func BenchmarkWhatIf(b *testing.B) {
	var objs []runtime.Object
	for i := range 5000 {
		name := fmt.Sprintf("node-%04d", i)
		objs = append(objs, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{v1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3), "pool": "all"}}})
		for j := range 30 {
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", j%10), Name: fmt.Sprintf("p-%04d-%02d", i, j),
				UID: k8stypes.UID(fmt.Sprint(i, "-", j)), OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: fmt.Sprintf("rs-%d", j), Controller: ptr.To(true)}}},
				Spec: v1.PodSpec{NodeName: name}}
			switch j % 3 {
			case 1:
				p.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}}
			case 2:
				p.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
			}
			objs = append(objs, p)
		}
	}
	client := fake.NewClientset(objs...)
	ctx := context.Background()
	nodes, err := listNodes(ctx, client)
	if err != nil {
		b.Fatal(err)
	}
	pods, err := listPods(ctx, client, "")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name, selector string
		nodes          []string
	}{{"one node", "", []string{"node-0000"}}, {"zone", v1.LabelTopologyZone + "=zone-0", nil}, {"every node", "pool=all", nil}} {
		for _, output := range []string{"table", "json"} {
			b.Run(bc.name+"/"+output, func(b *testing.B) {
				w := &whatIf{command: newCommand(genericiooptions.IOStreams{Out: io.Discard, ErrOut: io.Discard}, genericclioptions.NewConfigFlags(false), deps{now: time.Now}),
					output: output, selector: bc.selector,
					groupBy: []string{"namespace"}, maxPods: 100}
				w.budgets.define(pflag.NewFlagSet("what-if", pflag.ContinueOnError), true) // the defaults
				q := question{nodes: bc.nodes, specs: []taintSpec{{taint: defaultTaint}}}
				for b.Loop() {
					if err := w.answer(ctx, q, nodes, pods, nil, w.engineOptions(b)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func (w *whatIf) engineOptions(b *testing.B) engine.Options {
	o, err := w.budgets.options()
	if err != nil {
		b.Fatal(err)
	}
	return o
}
