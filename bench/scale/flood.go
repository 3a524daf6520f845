package scale

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/taintevict/taintevict/bench/realapiserver"
	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// FloodInflight is how many removals the flood side sends at once, as bench/realapiserver's.
const FloodInflight = realapiserver.DefaultFloodInflight

// FloodChild runs the flood side, the process that Side.Flood starts (the scale command
// with -flood-child first): no controller and no client rate limit, only the removal
// requests of taintevict's Deleter in -mode (it is that Deleter), each sent at its pod's
// deadline by the same rule as taintevict's (tolerations.Deadline of the node's taints,
// from their TimeAdded), by FloodInflight goroutines at once; a removal that fails is sent
// again at once. Its rate is the API server's capacity for those requests on this machine,
// in the same run as the controllers. It serves /readyz on -addr once its informers have
// synced, and stops on SIGTERM.
func FloodChild(args []string) error {
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "the side's kubeconfig")
	mode := fs.String("mode", string(clientgo.ModeDelete), "delete or evict")
	addr := fs.String("addr", "", "where to serve /readyz")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = -1, 0 // no client-side limit
	rc.ContentType = realapiserver.ContentProtobuf
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	var del eviction.Deleter = clientgo.NewPodDeleter(client, clientgo.PodDeleterOptions{})
	if clientgo.Mode(*mode) == clientgo.ModeEvict {
		if del, err = clientgo.NewEvictionDeleter(client, clientgo.EvictionDeleterOptions{}); err != nil {
			return err
		}
	}
	f := &flood{ctx: ctx, work: make(chan eviction.PodRef, 1<<17), seen: map[string]bool{}}
	factory := informers.NewSharedInformerFactory(client, 0)
	f.pods = factory.Core().V1().Pods().Informer()
	if err := f.pods.AddIndexers(cache.Indexers{"node": func(obj any) ([]string, error) {
		if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return err
	}
	nodes := factory.Core().V1().Nodes().Informer()
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: f.onNode, UpdateFunc: func(_, obj any) { f.onNode(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), f.pods.HasSynced, nodes.HasSynced) {
		return errors.New("scale: flood: the informers did not sync")
	}
	srv, err := serveReady(*addr)
	if err != nil {
		return err
	}
	defer srv.Close()
	var wg sync.WaitGroup
	for range FloodInflight {
		wg.Go(func() { f.remove(ctx, del) })
	}
	wg.Wait()
	return nil
}

// flood is the flood side's state: the removals due, and the NoExecute taints it has seen.
type flood struct {
	ctx  context.Context
	pods cache.SharedIndexInformer
	work chan eviction.PodRef
	mu   sync.Mutex
	seen map[string]bool // node/key of each NoExecute taint seen
}

// onNode schedules, for each NoExecute taint not seen before on the node, the removal of
// every pod on it at the deadline tolerations.Deadline gives it.
func (f *flood) onNode(obj any) {
	node, ok := obj.(*v1.Node)
	if !ok || !f.newTaint(node) {
		return
	}
	objs, _ := f.pods.GetIndexer().ByIndex("node", node.Name)
	now := time.Now()
	for _, o := range objs {
		p := o.(*v1.Pod)
		ref := eviction.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
		switch ev := tolerations.Deadline(node.Spec.Taints, p.Spec.Tolerations, now, now, tolerations.Options{}); ev.Verdict {
		case tolerations.EvictNow:
			f.send(ref)
		case tolerations.EvictAt:
			time.AfterFunc(ev.At.Sub(now), func() { f.send(ref) })
		}
	}
}

// send hands ref to the removing goroutines, unless the side stops first.
func (f *flood) send(ref eviction.PodRef) {
	select {
	case f.work <- ref:
	case <-f.ctx.Done():
	}
}

// newTaint says whether node carries a NoExecute taint that onNode has not seen on it.
func (f *flood) newTaint(node *v1.Node) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	fresh := false
	for _, t := range node.Spec.Taints {
		if k := node.Name + "/" + t.Key; t.Effect == v1.TaintEffectNoExecute && !f.seen[k] {
			f.seen[k], fresh = true, true
		}
	}
	return fresh
}

// remove sends the removals of work until ctx ends, each until it succeeds or the pod is
// gone.
func (f *flood) remove(ctx context.Context, del eviction.Deleter) {
	for {
		select {
		case <-ctx.Done():
			return
		case ref := <-f.work:
			for ctx.Err() == nil {
				if err := del.Delete(ctx, ref); err == nil || engine.IsGone(err) {
					break
				}
			}
		}
	}
}

// serveReady serves /readyz, always 200, on addr.
func serveReady(addr string) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("scale: flood: %w", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}
