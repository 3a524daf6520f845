// This test is not built in the repository: hack/release-check.sh copies it into a fresh
// module outside it, beside the README's failover.go, and runs it there, against the modules
// as the release would publish them.
package mycontroller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
)

// TestFailover runs the README's failover engine on a fake clock: a workload placed on two
// clusters tolerates an outage of east for 10 minutes and of west for 2; both go down; it is
// moved off west at +2m, the earliest deadline over its placements, and only once.
func TestFailover(t *testing.T) {
	start := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	clk := testclock.NewFakeClock(start)
	outage := func(secs int64) []v1.Toleration {
		return []v1.Toleration{{Key: "unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs}}
	}
	shop := Placement{Key: types.NamespacedName{Namespace: "shop", Name: "web"}, UID: "web-1", On: []engine.Binding{
		{Holder: "east", Tolerations: outage(600)},
		{Holder: "west", Tolerations: outage(120)},
	}}
	f := &Fleet{
		taints:     map[string][]v1.Taint{"east": nil, "west": nil},
		placements: map[types.NamespacedName]Placement{shop.Key: shop},
	}
	var mu sync.Mutex
	var moves []string
	e, err := NewFailover(f, func(_ context.Context, p engine.Ref) error {
		mu.Lock()
		defer mu.Unlock()
		moves = append(moves, p.String()+" off "+p.Holder+" at "+clk.Now().Sub(start).String())
		return nil
	}, engine.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- e.Run(ctx) }()
	e.TargetUpdated(shop)
	for _, cluster := range []string{"east", "west"} {
		taints := []v1.Taint{{Key: "unreachable", Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: start}}}
		f.mu.Lock()
		f.taints[cluster] = taints
		f.mu.Unlock()
		e.HolderUpdated(engine.Holder{Name: cluster, Taints: taints})
	}
	wait := func() {
		t.Helper()
		waitCtx, done := context.WithTimeout(ctx, 30*time.Second)
		defer done()
		if err := e.WaitIdle(waitCtx); err != nil {
			t.Fatalf("WaitIdle: %v", err)
		}
	}
	wait()
	if p := e.Pending(); len(p) != 1 || p[0].Target.Holder != "west" || !p[0].At.Equal(start.Add(2*time.Minute)) {
		t.Fatalf("got Pending %+v, want shop/web off west at +2m", p)
	}
	for range 12 {
		clk.Step(time.Minute)
		wait()
	}
	cancel()
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: got %v, want context.Canceled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(moves) != 1 || moves[0] != "shop/web off west at 2m0s" {
		t.Errorf("got moves %q, want one: shop/web off west at 2m0s", moves)
	}
}
