package device_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/device"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// Example embeds the device side in a DRA driver that has a SharedInformerFactory and a
// clientset: the lines between the two marks. Here the clientset is a fake one, holding a
// device that the driver tainted a minute ago, and a pod whose claim was allocated that
// device and does not tolerate the taint.
func Example() {
	client := fake.NewClientset(taintedGPU(time.Now().Add(-time.Minute))...)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	evicted := make(chan engine.Ref, 1)

	// --- from here: the informers, the Source, the deleter, the engine.
	inf, err := device.NewInformers(factory) // before factory.Start: it adds indexes
	if err != nil {
		log.Fatal(err)
	}
	src := device.NewSource(inf)
	deleter := clientgo.NewPodDeleter(client, clientgo.PodDeleterOptions{Pods: src,
		Reason: device.DisruptionReason, Message: device.DisruptionMessage})
	e, err := engine.New(eviction.PodActuator(deleter), engine.Source[*v1.Pod](src), engine.Options{
		Tolerations: tolerations.Options{Rules: tolerations.DeviceRules}, Observer: notify(evicted)})
	if err != nil {
		log.Fatal(err)
	}
	handled, err := src.AddHandlers(inf, e, klog.FromContext(ctx))
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Run(ctx) }) // until ctx is done
	factory.Start(ctx.Done())
	if cache.WaitFor(ctx, "", handled...) {
		e.Synced() // every device is known: the budgets of Options may count them
	}
	// --- to here.

	pod := <-evicted
	fmt.Printf("evicted %s for %s\n", pod, pod.Holder)
	cancel()
	wg.Wait()
	factory.Shutdown()
	// Output:
	// evicted ml/train for gpu.example.com/node-1/gpu-0
}

// The drop-in for kube's device taint eviction controller: NewController over a
// SharedInformerFactory and a clientset, run alone until the context ends. Here the
// clientset is a fake one, holding a device that its driver tainted a minute ago and a pod
// whose claim was allocated that device and does not tolerate the taint; an Observer of
// Options.Observers hears of the eviction. To run it under the Lease of the node side's
// clientgo.Controller on the same factory, give that one c.Lead in its Options.Alongside
// instead of calling Run.
func ExampleNewController() {
	client := fake.NewClientset(taintedGPU(time.Now().Add(-time.Minute))...)
	evicted := make(chan engine.Ref, 1)

	ctx, cancel := context.WithCancel(context.Background())
	c, err := device.NewController(ctx, client, clientgo.NewFactory(client), device.Options{
		Mode:      clientgo.ModeDelete, // kube's way; ModeEvict honours PodDisruptionBudgets
		Observers: []engine.Observer{notify(evicted)},
	})
	if err != nil {
		log.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(ctx) }()

	pod := <-evicted
	fmt.Printf("evicted %s for %s\n", pod, pod.Holder)
	cancel()
	fmt.Println("Run:", <-stopped)
	// Output:
	// evicted ml/train for gpu.example.com/node-1/gpu-0
	// Run: <nil>
}
