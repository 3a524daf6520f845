package device_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
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
	added := metav1.NewTime(time.Now().Add(-time.Minute))
	client := fake.NewClientset(
		&resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpus"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: "gpu.example.com", Pool: resourcev1.ResourcePool{Name: "node-1", ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0", Taints: []resourcev1.DeviceTaint{{Key: "gpu.example.com/ecc", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &added}}}},
		}},
		&resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gpu"}, Status: resourcev1.ResourceClaimStatus{
			Allocation:  &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "train", UID: "uid-1"}},
		}},
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train", UID: "uid-1"}, Spec: v1.PodSpec{NodeName: "node-1",
			ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: new("gpu")}}}},
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := &printer{evicted: make(chan struct{})}

	// --- from here: the informers, the Source, the deleter, the engine.
	inf, err := device.NewInformers(factory) // before factory.Start: it adds indexes
	if err != nil {
		log.Fatal(err)
	}
	src := device.NewSource(inf)
	deleter := clientgo.NewPodDeleter(client, clientgo.PodDeleterOptions{Pods: src,
		Reason: device.DisruptionReason, Message: device.DisruptionMessage})
	e, err := engine.New(eviction.PodActuator(deleter), engine.Source[*v1.Pod](src), engine.Options{
		Tolerations: tolerations.Options{Rules: tolerations.DeviceRules}, Observer: done})
	if err != nil {
		log.Fatal(err)
	}
	if err := src.AddHandlers(inf, e, klog.FromContext(ctx)); err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Run(ctx) }) // until ctx is done
	factory.Start(ctx.Done())
	// --- to here.

	<-done.evicted
	cancel()
	wg.Wait()
	factory.Shutdown()
	// Output:
	// evicted ml/train for gpu.example.com/node-1/gpu-0
}

// printer prints each eviction, and says when there was one.
type printer struct {
	engine.NopObserver
	evicted chan struct{}
}

func (p *printer) Succeeded(pod engine.Ref, _ engine.Attempt, _ bool) {
	fmt.Printf("evicted %s for %s\n", pod, pod.Holder)
	close(p.evicted)
}
