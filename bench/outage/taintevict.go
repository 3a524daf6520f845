package outage

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/metrics"
)

// newTaintevict makes taintevict's drop-in controller (clientgo.Controller: the eviction
// Manager with its default options, fed by the informers of factory, deleting as kube does
// in two calls, recording kube's Events) with its metrics on a registry of its own, since
// kube's controller always keeps its metrics too.
func newTaintevict(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Side, error) {
	c, err := clientgo.NewController(ctx, client, factory, clientgo.Options{Metrics: metrics.NewMeter(prometheus.NewRegistry())})
	if err != nil {
		return nil, fmt.Errorf("outage: clientgo.NewController: %w", err)
	}
	m := c.Manager()
	return &Side{Updates: m, Run: c.Run, Idle: func() bool { return m.Backlog() == 0 && idle(m.WaitIdle) }}, nil
}

// idle reports whether waitIdle finds the Manager (or engine) idle at once: nothing queued,
// nothing due, nothing running; it then also gives back the storage a burst of removals
// left, which it would otherwise give back a few seconds later.
func idle(waitIdle func(context.Context) error) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	return waitIdle(ctx) == nil
}
