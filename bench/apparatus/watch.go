package apparatus

import (
	"context"
	"fmt"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// PodWatch delivers the pod deletions a Client answered as an API server's watch and an
// informer do: after the DELETE is answered, not during it, in the order of the DELETEs, it
// removes the pod from the informer's store and then calls the handler with the pod as it
// was, as an informer calls OnDelete. A controller then sees its deleted pods go, and can
// drop what it kept of them, as in a real cluster.
//
// One goroutine, Run's, delivers everything. The pods themselves stay in the Cluster: the
// Client still needs them to answer NotFound, and they were there before the outage, so
// keeping them leaves a controller's heap growth its own.
//
// Deleted and Idle are safe for concurrent use; Run must be called once.
type PodWatch struct {
	cluster *Cluster
	store   cache.Store
	handle  func(old *v1.Pod)
	queue   chan int
	backlog atomic.Int64
	errs    atomic.Int64
}

// NewPodWatch returns a PodWatch that removes the deleted pods of cluster from store and
// tells handle.
func NewPodWatch(cluster *Cluster, store cache.Store, handle func(old *v1.Pod)) *PodWatch {
	// Every pod is deleted at most once: a queue as long as the cluster never blocks.
	return &PodWatch{cluster: cluster, store: store, handle: handle, queue: make(chan int, len(cluster.Pods))}
}

// Deleted queues the deletion of the pod with index i, which the Client answered. It never
// blocks; use it as the Client's OnDelete.
func (w *PodWatch) Deleted(i int) {
	w.backlog.Add(1)
	w.queue <- i
}

// Run delivers the deletions until ctx is done, and returns then.
func (w *PodWatch) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case i := <-w.queue:
			pod := w.cluster.Pods[i]
			if err := w.store.Delete(pod); err != nil {
				w.errs.Add(1) // an informer's store fails only on a key function's error
			}
			w.handle(pod)
			w.backlog.Add(-1)
		}
	}
}

// Idle reports whether every deletion queued so far has been delivered.
func (w *PodWatch) Idle() bool { return w.backlog.Load() == 0 }

// Err reports the deletions the store refused, if any.
func (w *PodWatch) Err() error {
	if n := w.errs.Load(); n > 0 {
		return fmt.Errorf("apparatus: the pod store refused %d deletions", n)
	}
	return nil
}
