package controllerruntime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
)

// Controller is a taint eviction controller inside a controller-runtime manager: the
// manager's pod and node informers feed an [eviction.Manager], which reads the manager's
// cache (a field index on spec.nodeName finds the pods of a node), removes pods through the
// Deleter of its Mode, and reports to kube's Events, the metrics of [Options.Metrics] and
// the caller's Observers. It keeps no cache of its own.
//
// It is a [manager.Runnable] that [New] adds to the manager. With the manager's leader
// election, it runs only on the replica that leads ([Controller.NeedLeaderElection]); the
// others keep their caches synced, and a new leader starts at once from its cache: since
// deadlines count from each taint's TimeAdded, it evicts at the times the old one would
// have.
//
// Its methods are safe for concurrent use. The zero Controller is not usable: create one
// with [New].
type Controller struct {
	manager     *eviction.Manager
	events      *clientgo.EventWriter // nil in ModeDryRun
	pods, nodes crcache.Informer
	logger      logr.Logger
	needLeader  bool
	started     atomic.Bool
	synced      chan struct{} // the handlers have handed the Manager the caches' contents
	stopped     chan struct{} // Start has returned
}

var (
	_ manager.Runnable               = (*Controller)(nil)
	_ manager.LeaderElectionRunnable = (*Controller)(nil)
)

// New builds a Controller on mgr and adds it to mgr, with a readiness check
// ([Controller.Ready], named by Options.ReadyzCheck); mgr.Start runs it. It registers the
// pod and node informers of mgr's cache, if they are not already, and indexes pods by the
// field spec.nodeName ([clientgo.NodeNameIndex]) with mgr's field indexer: a program that
// indexes that field itself must drop its own index, which this one serves as well (pods
// bound to a node, under the node's name). Call it before mgr.Start; called after it, it
// waits, bounded by ctx, for the informers to sync. It fails when mgr is nil, when an
// option is out of range, when opts.Manager.DryRun is set (use ModeDryRun), and when the
// index or the informers cannot be had.
func New(ctx context.Context, mgr manager.Manager, opts Options) (*Controller, error) {
	if mgr == nil {
		return nil, errors.New("controllerruntime: nil manager")
	}
	if opts.Mode == "" {
		opts.Mode = clientgo.ModeDelete
	}
	if opts.Manager.DryRun {
		return nil, fmt.Errorf("controllerruntime: Options.Manager.DryRun is set with Mode %q: ask for a dry run with Mode %q", opts.Mode, clientgo.ModeDryRun)
	}
	client, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("controllerruntime: a client of the manager's config: %w", err)
	}
	c := &Controller{
		logger:     mgr.GetLogger().WithName("taint-eviction"),
		needLeader: opts.NeedLeaderElection == nil || *opts.NeedLeaderElection,
		synced:     make(chan struct{}),
		stopped:    make(chan struct{}),
	}
	if c.pods, c.nodes, err = informers(ctx, mgr.GetCache(), mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	if err := c.build(client, newCache(mgr.GetCache()), opts); err != nil {
		return nil, err
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("controllerruntime: adding the controller to the manager: %w", err)
	}
	name := opts.ReadyzCheck
	if name == "" {
		name = defaultReadyzCheck
	}
	if err := mgr.AddReadyzCheck(name, func(*http.Request) error { return c.Ready() }); err != nil {
		return nil, fmt.Errorf("controllerruntime: adding the readiness check: %w", err)
	}
	return c, nil
}

// build makes the Events, the metrics, the Deleter and the Manager.
func (c *Controller) build(client kubernetes.Interface, cache cacheReader, opts Options) error {
	obs, delObs, err := c.observers(client, opts)
	if err != nil {
		return err
	}
	var o clientgo.DeleteObserver
	if len(delObs) > 0 {
		o = delObs
	}
	deleter, err := opts.Mode.NewDeleter(client, clientgo.EvictionDeleterOptions{
		PDBTimeout: opts.PDBTimeout, Pods: cache, Observer: o, Clock: opts.Manager.Clock})
	if err != nil {
		return fmt.Errorf("controllerruntime: %w", err)
	}
	if deleter != nil && opts.WrapDeleter != nil {
		deleter = opts.WrapDeleter(deleter)
	}
	mopts := opts.Manager
	mopts.Observer, mopts.DryRun = obs, opts.Mode == clientgo.ModeDryRun
	if c.manager, err = eviction.New(deleter, cache, mopts); err != nil {
		return fmt.Errorf("controllerruntime: %w", err)
	}
	return nil
}

// observers returns the Manager's Observer and the Deleter's DeleteObserver: kube's Events
// (not in ModeDryRun), the metrics, Manager.Observer and Observers, in that order.
func (c *Controller) observers(client kubernetes.Interface, opts Options) (eviction.Observers, clientgo.DeleteObservers, error) {
	var obs eviction.Observers
	var del clientgo.DeleteObservers
	add := func(o eviction.Observer) {
		obs = append(obs, o)
		if d, ok := o.(clientgo.DeleteObserver); ok {
			del = append(del, d)
		}
	}
	if opts.Mode != clientgo.ModeDryRun {
		ec := opts.EventClient
		if ec == nil {
			ec = client
		}
		c.events = clientgo.NewEventWriter(ec, clientgo.EventWriterOptions{Clock: opts.Manager.Clock})
		add(clientgo.NewEventObserver(c.events, clientgo.EventObserverOptions{}))
	}
	if opts.Metrics != nil {
		m, err := opts.Metrics.Instrument(clientgo.Instrumented{Controller: "node", Kube: clientgo.NodeKubeMetrics,
			Clock: opts.Manager.Clock, Stats: c.stats, ActWorkers: c.actWorkers})
		if err != nil {
			return nil, nil, fmt.Errorf("controllerruntime: %w", err)
		}
		add(m)
	}
	if opts.Manager.Observer != nil {
		add(opts.Manager.Observer)
	}
	for _, o := range opts.Observers {
		add(o)
	}
	return obs, del, nil
}

// stats and actWorkers read the Manager for the metrics; the Manager is made after them.
func (c *Controller) stats() eviction.Stats { return c.manager.Stats() }

func (c *Controller) actWorkers() int { return c.manager.DeleteWorkers() }

// NeedLeaderElection reports whether the manager runs the Controller only while it leads:
// true unless Options.NeedLeaderElection says false.
func (c *Controller) NeedLeaderElection() bool { return c.needLeader }

// Start runs the Controller until ctx is done; the manager calls it (on the replica that
// leads, with leader election). It hands every node and pod of the manager's cache to the
// Manager through event handlers on the informers, tells the Manager it has synced once
// they have (so that the brake and Confirm count every node before anything goes), and
// runs the Manager and the Event writer. When ctx is done (the manager stops, or loses the
// lead) it stops them, waits for their goroutines (a running Deleter call sees its context
// cancelled; Events still queued are not written, [Controller.Events] counts them), removes
// its handlers, and returns nil. It returns an error when the handlers cannot be added, and
// when the Manager failed (a method of its Cache or an Observer panicked: an
// [eviction.PanicError]), which stops the manager. A Controller starts once: a second call
// returns an error at once.
func (c *Controller) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("controllerruntime: Controller started more than once")
	}
	defer close(c.stopped)
	ctx = logr.NewContext(ctx, c.logger)
	regs, err := c.addHandlers()
	defer c.removeHandlers(regs)
	if err != nil {
		return err
	}
	checkers := make([]toolscache.DoneChecker, len(regs))
	for i, r := range regs {
		checkers[i] = r.reg.HasSyncedChecker()
	}
	// The Manager runs once it has been handed the informers' contents, so that none of
	// its reads of the cache comes before they have synced (see cacheReader).
	if !toolscache.WaitFor(ctx, "", checkers...) {
		return nil // stopped before the handlers had synced
	}
	c.manager.Synced() // every node is counted: the brake and Confirm may let evictions go
	close(c.synced)
	c.logger.V(1).Info("Caches handed to the Manager")
	return c.run(ctx)
}

// run runs the Manager and the Event writer until ctx is done or the Manager fails, and
// waits for both.
func (c *Controller) run(ctx context.Context) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	if c.events != nil {
		wg.Go(func() { _ = c.events.Run(rctx) })
	}
	err := c.manager.Run(rctx) // ctx's error once ctx is done
	cancel()
	wg.Wait()
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return fmt.Errorf("controllerruntime: stopped: %w", err)
}

// registration is an event handler added to an informer, to remove again.
type registration struct {
	informer crcache.Informer
	reg      toolscache.ResourceEventHandlerRegistration
}

// addHandlers connects the node and the pod informer to the Manager. An informer that runs
// already replays its cache to a new handler as adds.
func (c *Controller) addHandlers() ([]registration, error) {
	opts := toolscache.HandlerOptions{Logger: &c.logger}
	nodes, err := c.nodes.AddEventHandlerWithOptions(clientgo.HandlerFuncs(c.logger, c.manager.NodeUpdated), opts)
	if err != nil {
		return nil, fmt.Errorf("controllerruntime: adding the node event handler: %w", err)
	}
	regs := []registration{{c.nodes, nodes}}
	pods, err := c.pods.AddEventHandlerWithOptions(clientgo.HandlerFuncs(c.logger, c.manager.PodUpdated), opts)
	if err != nil {
		return regs, fmt.Errorf("controllerruntime: adding the pod event handler: %w", err)
	}
	return append(regs, registration{c.pods, pods}), nil
}

// removeHandlers removes the handlers, so that a stopped Controller is handed nothing more.
func (c *Controller) removeHandlers(regs []registration) {
	for _, r := range regs {
		if err := r.informer.RemoveEventHandler(r.reg); err != nil {
			c.logger.Error(err, "Removing an event handler")
		}
	}
}

// Ready returns nil when the Controller is ready: the manager's pod and node informers have
// synced and, on the replica that runs the Controller, its handlers have handed the
// Manager every node and pod they hold. The manager's readiness check calls it. It does not
// block.
func (c *Controller) Ready() error {
	if !c.pods.HasSynced() || !c.nodes.HasSynced() {
		return errors.New("controllerruntime: the pod and node informers have not synced")
	}
	if c.started.Load() {
		select {
		case <-c.synced:
		default:
			return errors.New("controllerruntime: handing the caches to the Manager")
		}
	}
	return nil
}

// Synced is closed once the Controller runs (the manager leads) and its handlers have
// handed the Manager every node and pod of the manager's cache; the Manager may still be
// working through them.
func (c *Controller) Synced() <-chan struct{} { return c.synced }

// Stopped is closed once Start has returned: no Deleter call or Event write of the
// Controller is under way. A manager that loses the lead returns from its Start without
// waiting for its runnables; a program that wants nothing of the Controller's in flight
// when it exits waits for Stopped (if Start was called).
func (c *Controller) Stopped() <-chan struct{} { return c.stopped }

// Leading reports whether the Controller runs: Start has been called and has not returned.
func (c *Controller) Leading() bool {
	select {
	case <-c.stopped:
		return false
	default:
		return c.started.Load()
	}
}

// Manager returns the Controller's Manager, for its Pending, Stats and Backlog.
func (c *Controller) Manager() *eviction.Manager { return c.manager }

// Events returns what the Controller did with its Events so far: queued, written and
// dropped (all zero in ModeDryRun).
func (c *Controller) Events() clientgo.EventCounts {
	if c.events == nil {
		return clientgo.EventCounts{}
	}
	return c.events.Counts()
}
