package outage

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// FloorWorkers is how many workers the floor side deletes with: the eviction Manager's
// default DeleteWorkers (eviction.Options: 0 means 8), which the drop-in controller uses.
const FloorWorkers = 8

// floor is the side "floor": taintevict's drop-in controller (clientgo.Controller) without
// its eviction Manager. When a node gains the unreachable NoExecute taint, it hands every
// pod of that node that does not tolerate the taint to FloorWorkers workers, which record
// the drop-in's Event (clientgo.EventObserver, through a clientgo.EventWriter, as the
// drop-in records it) and call the drop-in's clientgo.PodDeleter (the status PATCH and
// the DELETE, reading the pod informer's store as the drop-in's does).
//
// It keeps no schedule and no state for pods that tolerate the taint for a while (they are
// due 300 s later, outside the measured window), ignores pod updates, neither retries nor
// bounds a Delete, and keeps no metrics. Its figures are thus what the apparatus, the
// requests and the Events cost with no scheduling at all: a floor for any controller that
// makes those requests and records those Events.
//
// The EventWriter drops no Event (client-go's broadcaster, which kube's controller uses,
// drops past 1,000 queued); Result.Requests.Events counts those written until the last
// DELETE.
//
// NodeUpdated never blocks: it queues. A Delete that fails for another reason than a
// pod gone is counted and not retried; Run then returns an error, and the outage waits for
// that pod's DELETE until its timeout.
type floor struct {
	pods    clientgo.InformerCache
	deleter *clientgo.PodDeleter
	writer  *clientgo.EventWriter

	mu      sync.Mutex
	queue   []work // FIFO from head
	head    int
	wake    chan struct{} // holds a token while the queue may hold work
	backlog atomic.Int64  // queued or being deleted
	failed  atomic.Int64
	running atomic.Bool
}

// work is one pod to evict, and when it became due: when its node was tainted.
type work struct {
	ref eviction.PodRef
	due time.Time
}

var _ Updates = (*floor)(nil)

// newFloor makes the floor side over the informers of factory (with the drop-in's
// spec.nodeName index), deleting through client.
func newFloor(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Side, error) {
	inf, err := clientgo.NewInformers(factory)
	if err != nil {
		return nil, fmt.Errorf("outage: %w", err)
	}
	cache := clientgo.NewInformerCache(inf)
	w := clientgo.NewEventWriter(client, clientgo.EventWriterOptions{})
	// The Event is recorded as the Controller records it: once the Deleter's status patch
	// has found the pod.
	events := clientgo.NewEventObserver(w, clientgo.EventObserverOptions{})
	f := &floor{
		pods:    cache,
		deleter: clientgo.NewPodDeleter(client, clientgo.PodDeleterOptions{Pods: cache, Observer: events}),
		writer:  w,
		wake:    make(chan struct{}, 1),
	}
	return &Side{Updates: f, Run: f.run, Idle: f.idle}, nil
}

// NodeUpdated queues the untolerating pods of a node that has just gained the unreachable
// NoExecute taint.
func (f *floor) NodeUpdated(old, new *v1.Node) {
	taint := unreachable(new)
	if taint == nil || unreachable(old) != nil {
		return
	}
	pods, err := f.pods.PodsOnNode(new.Name)
	if err != nil {
		f.failed.Add(1)
		return
	}
	var due time.Time
	if taint.TimeAdded != nil {
		due = taint.TimeAdded.Time
	}
	f.mu.Lock()
	for _, p := range pods {
		if !tolerated(p, taint) {
			f.queue = append(f.queue, work{eviction.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Holder: new.Name}, due})
			f.backlog.Add(1)
		}
	}
	f.mu.Unlock()
	f.signal()
}

// PodUpdated does nothing: the floor evicts only on node updates.
func (f *floor) PodUpdated(_, _ *v1.Pod) {}

func unreachable(n *v1.Node) *v1.Taint {
	if n == nil {
		return nil
	}
	for i, t := range n.Spec.Taints {
		if t.Key == v1.TaintNodeUnreachable && t.Effect == v1.TaintEffectNoExecute {
			return &n.Spec.Taints[i]
		}
	}
	return nil
}

func tolerated(p *v1.Pod, taint *v1.Taint) bool {
	for i := range p.Spec.Tolerations {
		if tolerations.Tolerates(&p.Spec.Tolerations[i], taint, tolerations.Options{}) {
			return true
		}
	}
	return false
}

// signal wakes a worker, unless one has been woken already.
func (f *floor) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest work, waiting for some until ctx is done.
func (f *floor) next(ctx context.Context) (work, bool) {
	for {
		f.mu.Lock()
		if f.head < len(f.queue) {
			w := f.queue[f.head]
			f.queue[f.head] = work{}
			f.head++
			if f.head == len(f.queue) {
				f.queue, f.head = nil, 0
			} else {
				f.signal() // more work: pass the token on
			}
			f.mu.Unlock()
			return w, true
		}
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return work{}, false
		case <-f.wake:
		}
	}
}

// run writes Events as the drop-in's Controller.Run does and runs the workers until ctx
// is done; then it waits for them and the writer, and reports failed work.
func (f *floor) run(ctx context.Context) error {
	f.running.Store(true)
	var wg sync.WaitGroup
	wg.Go(func() { _ = f.writer.Run(ctx) })
	for range FloorWorkers {
		wg.Go(func() { f.work(ctx) })
	}
	wg.Wait()
	if n := f.failed.Load(); n > 0 {
		return fmt.Errorf("outage: the floor failed %d evictions", n)
	}
	return nil
}

// work deletes (the Deleter has the Event recorded), as the Manager's delete workers do on
// a first attempt, until ctx is done.
func (f *floor) work(ctx context.Context) {
	for {
		w, ok := f.next(ctx)
		if !ok {
			return
		}
		if err := f.deleter.Delete(ctx, w.ref); err != nil && !engine.IsGone(err) {
			f.failed.Add(1)
		}
		f.backlog.Add(-1)
	}
}

// idle reports whether the floor records Events and has nothing left to delete.
func (f *floor) idle() bool { return f.running.Load() && f.backlog.Load() == 0 }
