package realapiserver

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// floodSide makes the flood: no controller, the same removal requests as taintevict's
// Deleter in cfg.Side.Mode (it is that Deleter), sent as soon as each node carries the
// taint, for each of its pods that does not tolerate it, by Inflight goroutines at once,
// on a client with no rate limit. A removal that fails is sent again at once. What it
// achieves is the API server's capacity for these requests, with that many in flight:
// the bound a controller's throughput is measured against.
func floodSide(ctx context.Context, rc *rest.Config, cfg ChildConfig) (run func(context.Context), synced func(context.Context) bool, err error) {
	frc := rest.CopyConfig(rc)
	frc.QPS, frc.Burst, frc.RateLimiter = -1, 0, nil // no client-side limit
	client, err := kubernetes.NewForConfig(frc)
	if err != nil {
		return nil, nil, err
	}
	var del eviction.Deleter = clientgo.NewPodDeleter(client, clientgo.PodDeleterOptions{})
	if cfg.Side.Mode == clientgo.ModeEvict {
		if del, err = clientgo.NewEvictionDeleter(client, clientgo.EvictionDeleterOptions{}); err != nil {
			return nil, nil, err
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	pods, nodes := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	inflight := cfg.Side.Inflight
	if inflight == 0 {
		inflight = DefaultFloodInflight
	}
	work := make(chan eviction.PodRef, 1<<16)
	var mu sync.Mutex
	flooded := map[string]bool{}
	onNode := func(obj any) {
		node, ok := obj.(*v1.Node)
		if !ok || !tainted(node) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if flooded[node.Name] {
			return
		}
		flooded[node.Name] = true
		list, _ := pods.Lister().List(labels.Everything())
		for _, p := range list {
			if p.Spec.NodeName == node.Name && !toleratesTaint(p) {
				work <- eviction.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
			}
		}
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onNode, UpdateFunc: func(_, obj any) { onNode(obj) },
	}); err != nil {
		return nil, nil, err
	}
	pods.Informer() // registered before Start
	run = func(ctx context.Context) {
		factory.Start(ctx.Done())
		var wg sync.WaitGroup
		for range inflight {
			wg.Go(func() {
				for {
					select {
					case <-ctx.Done():
						return
					case ref := <-work:
						for ctx.Err() == nil {
							if err := del.Delete(ctx, ref); err == nil || engine.IsGone(err) {
								break
							}
						}
					}
				}
			})
		}
		wg.Wait()
		factory.Shutdown()
	}
	synced = func(ctx context.Context) bool {
		return cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced, nodes.Informer().HasSynced)
	}
	return run, synced, nil
}

// tainted says whether node carries the run's NoExecute taint.
func tainted(node *v1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == TaintKey && t.Effect == v1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// toleratesTaint says whether pod tolerates the run's taint (BuildCluster gives half of
// the pods a toleration of it, and the other half none).
func toleratesTaint(pod *v1.Pod) bool {
	for _, t := range pod.Spec.Tolerations {
		if t.Key == TaintKey {
			return true
		}
	}
	return false
}
