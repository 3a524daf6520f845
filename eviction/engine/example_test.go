package engine_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
)

// workload is a target that is not a pod: a workload placed on two clusters, which
// tolerates each cluster's taints with the tolerations of its placement there.
type workload struct {
	name      string
	uid       types.UID
	placement map[string][]v1.Toleration // cluster -> tolerations
}

// clusters is the Source: the clusters' taints and the workloads, as a multi-cluster
// controller's listers would hold them.
type clusters struct {
	mu        sync.Mutex
	taints    map[string][]v1.Taint
	workloads map[string]*workload
}

func (f *clusters) Target(key types.NamespacedName) (*workload, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.workloads[key.Name]
	return w, ok, nil
}

func (f *clusters) TargetsOn(cluster string) ([]*workload, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*workload
	for _, w := range f.workloads {
		if _, ok := w.placement[cluster]; ok {
			out = append(out, w)
		}
	}
	return out, nil
}

func (f *clusters) Holder(cluster string) (engine.Holder, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	taints, ok := f.taints[cluster]
	return engine.Holder{Name: cluster, Taints: taints}, ok, nil
}

func (f *clusters) Locate(w *workload) (types.NamespacedName, string) {
	return types.NamespacedName{Name: w.name}, ""
}

func (f *clusters) Describe(w *workload, d *engine.Target) {
	d.Key, d.UID = types.NamespacedName{Name: w.name}, w.uid
	for _, cluster := range []string{"east", "west"} {
		if tols, ok := w.placement[cluster]; ok {
			d.Bindings = append(d.Bindings, engine.Binding{Holder: cluster, Tolerations: tols})
		}
	}
}

// Example: a workload placed on two clusters, which tolerates an outage of east for 10
// minutes and of west for 2. Both clusters go down, one minute apart; the workload is acted
// on at the earliest deadline over its placements: west's, at 10:03. The actuator here
// prints; a real one would move the workload to a healthy cluster.
func Example() {
	start := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	clk := testclock.NewFakeClock(start)
	secs := func(s int64) *int64 { return &s }
	outage := func(key string, secs *int64) v1.Toleration {
		return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs}
	}
	f := &clusters{
		taints: map[string][]v1.Taint{"east": nil, "west": nil},
		workloads: map[string]*workload{"shop": {name: "shop", uid: "shop-1", placement: map[string][]v1.Toleration{
			"east": {outage("cluster.example.com/unreachable", secs(600))},
			"west": {outage("cluster.example.com/unreachable", secs(120))},
		}}},
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

	down := func(cluster string) {
		taint := v1.Taint{Key: "cluster.example.com/unreachable", Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: clk.Now()}}
		f.mu.Lock()
		f.taints[cluster] = []v1.Taint{taint}
		f.mu.Unlock()
		e.HolderUpdated(engine.Holder{Name: cluster, Taints: []v1.Taint{taint}})
		_ = e.WaitIdle(ctx)
	}
	down("east")
	clk.Step(time.Minute)
	down("west")
	for _, p := range e.Pending() {
		fmt.Printf("pending: %s off %s at %s\n", p.Target, p.Target.Holder, p.At.Format(time.TimeOnly))
	}
	for range 10 {
		clk.Step(time.Minute)
		_ = e.WaitIdle(ctx)
	}
	cancel()
	<-done
	// Output:
	// pending: shop off west at 10:03:00
	// 10:03:00 moving shop off west
}
