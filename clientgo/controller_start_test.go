package clientgo

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// TestControllerStartsAtOnce: a Controller started on a cluster with a pod due at once is
// synced, and evicts it, at +0 of the bubble's clock (with an Elector too:
// controller_lease_test.go): it waits for the informers and for its handlers on their
// channels, never by polling (client-go's WaitForCacheSync looks every 100 ms). Synced
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
	var once sync.Once
	factory := wrapHandlers(NewFactory(client), func(h cache.ResourceEventHandler) cache.ResourceEventHandler {
		return beforeHandler{h: h, before: func() { once.Do(func() { close(handled) }) }}
	}, nil)
	c, err := NewController(t.Context(), client, factory, Options{Elector: elector})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	<-c.Synced()
	if got := time.Since(start); got != 0 {
		t.Errorf("synced at +%v, want +0", got)
	}
	select {
	case <-handled:
	default:
		t.Error("synced before the pod handler was handed the pod")
	}
	time.Sleep(time.Second)
	synctest.Wait()
	if got := time.Duration(deleted.Load()); got != 0 {
		t.Errorf("web-1 deleted at +%v (-1ns: never), want +0", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
