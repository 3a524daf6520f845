package clientgo_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"

	"github.com/taintevict/taintevict/eviction"

	"github.com/taintevict/taintevict/clientgo"
)

// Example runs a Manager on a program's own SharedInformerFactory: the lines between the
// two marks are all a controller that has a factory and a clientset needs. Here the
// clientset is a fake one, holding a node that has been unreachable for a minute and a pod
// that does not tolerate it.
func Example() {
	added := metav1.NewTime(time.Now().Add(-time.Minute))
	client := fake.NewClientset(
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: v1.NodeSpec{Taints: []v1.Taint{
			{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &added}}}},
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: "uid-1"}, Spec: v1.PodSpec{NodeName: "node-1"}},
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := &printer{evicted: make(chan struct{})}

	// --- from here: the informers, the Cache, the Deleter, the Manager.
	inf, err := clientgo.NewInformers(factory) // before factory.Start: it adds an index
	if err != nil {
		log.Fatal(err)
	}
	cache := clientgo.NewInformerCache(inf)
	deleter := clientgo.NewPodDeleter(client, clientgo.PodDeleterOptions{Pods: cache})
	m, err := eviction.New(deleter, cache, eviction.Options{Observer: done})
	if err != nil {
		log.Fatal(err)
	}
	if err := inf.AddHandlers(m, klog.FromContext(ctx)); err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.Run(ctx) }) // until ctx is done
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	// --- to here.

	<-done.evicted
	cancel()
	wg.Wait()
	factory.Shutdown()
	// Output:
	// evicted shop/web-1 from node-1
}

// printer prints each eviction, and says when there was one.
type printer struct {
	eviction.NopObserver
	evicted chan struct{}
}

var _ eviction.Observer = (*printer)(nil)

func (p *printer) Succeeded(pod eviction.PodRef, _ eviction.Attempt, _ bool) {
	fmt.Printf("evicted %s from %s\n", pod, pod.Holder)
	close(p.evicted)
}
