package outage

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/taintevict/taintevict/clientgo"
)

// newTaintevict makes taintevict's drop-in controller (clientgo.Controller: the eviction
// Manager with its default options, fed by the informers of factory, deleting as kube does
// in two calls, recording kube's Events) with its metrics on a registry of its own, since
// kube's controller always keeps its metrics too.
func newTaintevict(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Side, error) {
	c, err := clientgo.NewController(ctx, client, factory, clientgo.Options{Metrics: prometheus.NewRegistry()})
	if err != nil {
		return nil, fmt.Errorf("outage: clientgo.NewController: %w", err)
	}
	m := c.Manager()
	return &Side{Updates: m, Run: c.Run, Idle: func() bool { return m.Backlog() == 0 }}, nil
}
