package clientgo

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestControllerStartsAtOnce: a Controller started on a cluster with a pod due at once
// evicts it at +0 of the bubble's clock: the Manager runs while the informers list (with an
// Elector, controller_lease_test.go, once Synced closes). Synced closes at the first look of client-go's
// WaitForCacheSync after they listed, +100ms: client-go v0.35, the oldest supported, has no
// channel to wait on, so the Controller looks every 100 ms as WaitForCacheSync does. Synced
// closes only once the handlers have been handed the initial listing: the pod is pending
// or gone by then.
func TestControllerStartsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { StartsAtOnce(t, nil) })
}

// StartsAtOnce is TestControllerStartsAtOnce with elector, if not nil, as Options.Elector.
func StartsAtOnce(t *testing.T, elector Elector) {
	start := time.Now()
	client := fake.NewClientset(taintedNode("node-1", start.Add(-time.Minute)), podOn("shop", "web-1", "node-1"))
	var deleted atomic.Int64
	deleted.Store(-1)
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		deleted.CompareAndSwap(-1, int64(time.Since(start)))
		return false, nil, nil
	})
	handled := make(chan struct{})
	c, err := NewController(t.Context(), client, NewFactory(client), Options{Elector: elector,
		wrapUpdater: func(u Updater) Updater { return &noting{Updater: u, pod: handled} }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	<-c.Synced()
	const firstLook = 100 * time.Millisecond // WaitForCacheSync's period
	if got := time.Since(start); got != firstLook {
		t.Errorf("synced at +%v, want +%v", got, firstLook)
	}
	select {
	case <-handled:
	default:
		t.Error("synced before the pod handler was handed the pod")
	}
	time.Sleep(time.Second)
	synctest.Wait()
	wantDeleted := time.Duration(0) // the Manager runs while the informers list
	if elector != nil {
		wantDeleted = firstLook // under a Lease, the Manager starts once the caches synced
	}
	if got := time.Duration(deleted.Load()); got != wantDeleted {
		t.Errorf("web-1 deleted at +%v (-1ns: never), want +%v", got, wantDeleted)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// noting is an Updater that closes pod when it is first handed a pod.
type noting struct {
	Updater
	pod    chan struct{}
	closed atomic.Bool
}

func (n *noting) PodUpdated(old, new *v1.Pod) {
	if n.closed.CompareAndSwap(false, true) {
		close(n.pod)
	}
	n.Updater.PodUpdated(old, new)
}
