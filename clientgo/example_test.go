package clientgo_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"

	"github.com/taintevict/taintevict/clientgo"
)

// Example runs a Manager on a program's own SharedInformerFactory: the lines between the
// two marks are all that a controller with a factory and a clientset adds. Here the
// clientset is a fake one, holding a node unreachable for a minute and a pod on it that
// does not tolerate that.
func Example() {
	client := fake.NewClientset(unreachable(time.Now().Add(-time.Minute)), web1())
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	evicted := make(chan eviction.PodRef, 1)

	// --- from here: the informers, the Cache, the Deleter, the Manager.
	inf, err := clientgo.NewInformers(factory) // before factory.Start: it adds an index
	if err != nil {
		log.Fatal(err)
	}
	cached := clientgo.NewInformerCache(inf)
	deleter := clientgo.NewPodDeleter(client, clientgo.PodDeleterOptions{Pods: cached})
	m, err := eviction.New(deleter, cached, eviction.Options{Observer: notify(evicted)})
	if err != nil {
		log.Fatal(err)
	}
	handled, err := inf.AddHandlers(m, klog.FromContext(ctx))
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.Run(ctx) }) // until ctx is done
	factory.Start(ctx.Done())
	if cache.WaitFor(ctx, "", handled...) {
		m.Synced() // every node is known: a brake or Confirm of Options may count them
	}
	// --- to here.

	pod := <-evicted
	fmt.Printf("evicted %s from %s\n", pod, pod.Holder)
	cancel()
	wg.Wait()
	factory.Shutdown()
	// Output:
	// evicted shop/web-1 from node-1
}

// The drop-in controller: NewController over a SharedInformerFactory and a clientset, its
// probes served by Handler, and Run until the context ends. Here the clientset is a fake
// one, holding a node unreachable for a minute and a pod on it that does not tolerate that;
// an Observer of Options.Observers hears of the eviction.
func ExampleNewController() {
	client := fake.NewClientset(unreachable(time.Now().Add(-time.Minute)), web1())
	evicted := make(chan eviction.PodRef, 1)

	ctx, cancel := context.WithCancel(context.Background())
	c, err := clientgo.NewController(ctx, client, clientgo.NewFactory(client), clientgo.Options{
		Mode:      clientgo.ModeDelete, // kube's way; ModeEvict honours PodDisruptionBudgets
		Observers: []eviction.Observer{notify(evicted)},
	})
	if err != nil {
		log.Fatal(err)
	}
	probes := httptest.NewServer(c.Handler(nil)) // /healthz, /readyz; /metrics when given one
	defer probes.Close()
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(ctx) }()

	<-c.Synced()
	resp, err := http.Get(probes.URL + "/readyz")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("/readyz:", resp.Status)
	pod := <-evicted
	fmt.Printf("evicted %s from %s\n", pod, pod.Holder)
	cancel()
	fmt.Println("Run:", <-stopped)
	// Output:
	// /readyz: 200 OK
	// evicted shop/web-1 from node-1
	// Run: <nil>
}

// An EvictionDeleter evicts through the Eviction API, so that PodDisruptionBudgets are
// honoured; with PDBTimeout, a pod that the budgets have refused for that long is deleted
// instead. The Manager retries a refused eviction with its backoff; here the calls are made
// by hand, on a fake clock, and the fake clientset refuses every Eviction, as the API
// server does when a budget has no disruption left.
func ExampleNewEvictionDeleter() {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset(web1())
	budgetRefuses(client)
	d, err := clientgo.NewEvictionDeleter(client, clientgo.EvictionDeleterOptions{
		PDBTimeout: 5 * time.Minute,
		Clock:      clk, // a Controller gives its own
	})
	if err != nil {
		log.Fatal(err)
	}
	pod := eviction.PodRef{Namespace: "shop", Name: "web-1", UID: web1().UID}
	start := clk.Now()
	for _, wait := range []time.Duration{0, 4 * time.Minute, time.Minute} {
		clk.Step(wait)
		err := d.Delete(context.Background(), pod)
		refused := engine.IsPDBRefusal(err) // not the API server's flow control: PDBTimeout counts it
		fmt.Printf("+%v: refused by a budget: %v, error: %v\n", clk.Since(start), refused, err != nil)
	}
	_, err = client.CoreV1().Pods("shop").Get(context.Background(), "web-1", metav1.GetOptions{})
	fmt.Println("web-1 deleted:", apierrors.IsNotFound(err))
	// Output:
	// +0s: refused by a budget: true, error: true
	// +4m0s: refused by a budget: true, error: true
	// +5m0s: refused by a budget: false, error: false
	// web-1 deleted: true
}
