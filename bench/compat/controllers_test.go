package compat

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/tainteviction"

	"github.com/taintevict/taintevict/clientgo"
)

// cluster is one controller on a fake clientset of its own, with a record of the pod
// DELETEs the controller sent and when.
type cluster struct {
	client *fake.Clientset
	start  time.Time

	mu      sync.Mutex
	deletes map[string]time.Duration // pod name -> first DELETE, since start
	// failUntil makes every pod DELETE fail until that long after start.
	failUntil time.Duration
}

var errInjected = errors.New("compat: injected DELETE failure")

// newCluster makes the fake clientset with NewSimpleClientset, as kube's own tests do: no
// scenario needs server-side apply, and NewClientset's field manager costs seconds to build
// under the race detector and milliseconds per write, which the real-clock tolerances would
// feel.
func newCluster(objects []runtime.Object, start time.Time, failUntil time.Duration) *cluster {
	c := &cluster{client: fake.NewSimpleClientset(objects...), start: start, deletes: map[string]time.Duration{}, failUntil: failUntil}
	c.client.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		since := time.Since(c.start)
		if since < c.failUntil {
			return true, nil, errInjected
		}
		name := a.(clienttesting.DeleteAction).GetName()
		c.mu.Lock()
		if _, ok := c.deletes[name]; !ok {
			c.deletes[name] = since
		}
		c.mu.Unlock()
		return false, nil, nil // the tracker deletes it
	})
	return c
}

func (c *cluster) deleted(name string) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.deletes[name]
	return d, ok
}

// run starts the named controller over c and returns a function that stops it and waits
// for it.
func (c *cluster) run(t *testing.T, impl string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	factory := informers.NewSharedInformerFactory(c.client, 0)
	var runCtl func(ctx context.Context)
	switch impl {
	case "kube":
		pods := factory.Core().V1().Pods()
		if err := pods.Informer().AddIndexers(cache.Indexers{"spec.nodeName": byNodeName}); err != nil {
			t.Fatal(err)
		}
		tc, err := tainteviction.New(ctx, c.client, pods, factory.Core().V1().Nodes(), "taint-eviction-controller")
		if err != nil {
			t.Fatal(err)
		}
		factory.Start(ctx.Done())
		runCtl = tc.Run
	case "taintevict":
		ctl, err := clientgo.NewController(ctx, c.client, factory, clientgo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		runCtl = func(ctx context.Context) { _ = ctl.Run(ctx) }
	}
	done := make(chan struct{})
	go func() { defer close(done); runCtl(ctx) }()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%s: the %v informer did not sync", impl, typ)
		}
	}
	return func() { cancel(); <-done; factory.Shutdown() }
}

func byNodeName(obj any) ([]string, error) {
	if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName != "" {
		return []string{pod.Spec.NodeName}, nil
	}
	return nil, nil
}
