package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/taintevict/taintevict/eviction"
)

// Component is the event source of the controller's Events: what `kubectl get events`
// shows in its SOURCE column.
const Component = "taint-eviction-controller"

// ControllerOptions configures a [Controller].
type ControllerOptions struct {
	// Out receives the Observer's line per decision; nil discards them.
	Out io.Writer
	// DryRun makes the controller delete nothing, mark nothing and record no Events: it
	// only reports what it would do.
	DryRun bool
	// Observers are told every decision too, after the controller's own [Observer]: for
	// metrics, say, or for a test to wait on.
	Observers []eviction.Observer
}

// Controller is a taint eviction controller: the pod and node informers of a
// SharedInformerFactory feed an [eviction.Manager], which reads their caches through an
// [InformerCache], evicts through a [PodDeleter] and reports to an [Observer] that records
// Events through an event broadcaster. It is what kube-controller-manager's taint eviction
// controller is, with the eviction logic taken from the library.
type Controller struct {
	client      kubernetes.Interface
	factory     informers.SharedInformerFactory
	informers   Informers
	manager     *eviction.Manager
	broadcaster record.EventBroadcaster
	dryRun      bool
	synced      chan struct{}
}

// NewFactory returns the SharedInformerFactory for a Controller: no periodic resync (the
// Manager keeps its own schedule, and a resync would only make it look at every pod
// again), and managedFields dropped from the cached objects, which no one here reads and
// which can be a large part of a pod's size.
func NewFactory(client kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(dropManagedFields))
}

func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// NewController wires a Controller over factory, which must not have been started yet; the
// Controller's Run starts it and shuts it down. ctx only gives the logger of the event
// handlers and the event broadcaster.
func NewController(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory, opts ControllerOptions) (*Controller, error) {
	logger := klog.FromContext(ctx)
	inf, err := NewInformers(factory)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		client:      client,
		factory:     factory,
		informers:   inf,
		broadcaster: record.NewBroadcaster(record.WithContext(ctx)),
		dryRun:      opts.DryRun,
		synced:      make(chan struct{}),
	}
	obs := &Observer{Out: opts.Out}
	if !opts.DryRun {
		obs.Recorder = c.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: Component}).WithLogger(logger)
	}
	var deleter eviction.Deleter
	if !opts.DryRun {
		deleter = PodDeleter{Client: client}
	}
	c.manager, err = eviction.New(deleter, NewInformerCache(inf), eviction.Options{
		DryRun:   opts.DryRun,
		Observer: append(eviction.Observers{obs}, opts.Observers...),
	})
	if err != nil {
		c.broadcaster.Shutdown()
		return nil, err
	}
	if err := inf.AddHandlers(c.manager, logger); err != nil {
		c.broadcaster.Shutdown()
		return nil, err
	}
	return c, nil
}

// Manager returns the controller's Manager, for its Pending and Backlog.
func (c *Controller) Manager() *eviction.Manager { return c.manager }

// Informers returns the controller's informers, for a program that wants to read their
// caches or add handlers of its own (before Run).
func (c *Controller) Informers() Informers { return c.informers }

// Synced is closed once the informers' caches have synced and their handlers have handed
// every node and pod of the initial listing to the Manager, which may still be working
// through them.
func (c *Controller) Synced() <-chan struct{} { return c.synced }

// Run runs the controller until ctx is done: it starts the event recording, the Manager and
// the informers, waits for the caches, and then for ctx. Before it returns, it stops all of
// them and waits for their goroutines, in that order: the Manager first, so that no Deleter
// call or Event is under way when the broadcaster and the informers go. The Manager logs
// through ctx's logger (klog.FromContext). Run returns nil when ctx ends it, and an error
// if the caches never synced for another reason. A Controller runs once.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait() // Manager.Run has returned
		c.broadcaster.Shutdown()
		c.factory.Shutdown() // waits for the informers' goroutines
		logger.V(1).Info("Stopped")
	}()

	if !c.dryRun {
		c.broadcaster.StartStructuredLogging(3)
		c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
	}
	// The Manager keeps the updates that arrive before it runs; starting it first means
	// it works through the initial listing while the rest of it still arrives.
	wg.Go(func() { _ = c.manager.Run(ctx) })
	c.factory.StartWithContext(ctx)
	if err := c.factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("waiting for the informers' caches: %w", err)
	}
	logger.V(1).Info("Caches synced", "dryRun", c.dryRun)
	close(c.synced)
	<-ctx.Done()
	return nil
}
