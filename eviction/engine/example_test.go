package engine_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
)

// Example: a workload placed on two clusters, which tolerates an outage of east for 10
// minutes and of west for 2. Both clusters go down, one minute apart; the workload is acted
// on at the earliest deadline over its placements: west's, at 10:03. The actuator here
// prints; a real one would move the workload to a healthy cluster.
func Example() {
	clk := testclock.NewFakeClock(time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC))
	outage := func(seconds int64) v1.Toleration {
		return v1.Toleration{Key: "cluster.example.com/unreachable", Operator: v1.TolerationOpExists, TolerationSeconds: &seconds}
	}
	f := &clusters{
		taints: map[string][]v1.Taint{"east": nil, "west": nil},
		workloads: map[string]*workload{"shop": {name: "shop", uid: "shop-1",
			placement: map[string][]v1.Toleration{"east": {outage(600)}, "west": {outage(120)}}}},
	}
	move := engine.ActuatorFunc(func(_ context.Context, w engine.Ref) error {
		fmt.Printf("%s moving %s off %s\n", clk.Now().Format(time.TimeOnly), w, w.Holder)
		return nil
	})
	e, err := engine.New(move, engine.Source[*workload](f), engine.Options{Clock: clk})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Run(ctx) }()

	down := func(cluster string) { // the clusters' informer's handler
		taint := v1.Taint{Key: "cluster.example.com/unreachable", Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: clk.Now()}}
		f.setTaints(cluster, taint)
		e.HolderUpdated(engine.Holder{Name: cluster, Taints: []v1.Taint{taint}})
		_ = e.WaitIdle(ctx)
	}
	down("east")
	clk.Step(time.Minute)
	down("west")

	for _, p := range e.Pending() {
		fmt.Printf("pending: %s off %s at %s\n", p.Target, p.Target.Holder, p.At.Format(time.TimeOnly))
	}
	clk.Step(2 * time.Minute)
	_ = e.WaitIdle(ctx)
	cancel()
	<-done
	// Output:
	// pending: shop off west at 10:03:00
	// 10:03:00 moving shop off west
}
