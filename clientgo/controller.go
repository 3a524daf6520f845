package clientgo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/taintevict/taintevict/eviction"
)

// Mode says how a [Controller] removes pods.
type Mode string

// The Modes.
const (
	// ModeDelete removes pods with a [PodDeleter]: kube's way, in two API calls.
	ModeDelete Mode = "delete"
	// ModeEvict removes pods with an [EvictionDeleter], which honours PDBs.
	ModeEvict Mode = "evict"
	// ModeDryRun deletes no pod, marks none and records no Events; the metrics and the
	// Observers are told a due eviction as Succeeded with dryRun true.
	ModeDryRun Mode = "dry-run"
)

// Options configures a [Controller]. The zero value deletes as kube does, with the
// Manager's defaults, no metrics and no leader election.
type Options struct {
	// Mode is how pods are removed; "" means ModeDelete.
	Mode Mode
	// PDBTimeout is [EvictionDeleterOptions.PDBTimeout], for ModeEvict.
	PDBTimeout time.Duration
	// Manager is the Manager's options ([eviction.Options]). Manager.DryRun must be false:
	// ask for a dry run with Mode. Manager.Clock (nil: the real one) is the Controller's
	// one clock, for all but leader election; on a fake clock, the taints' TimeAdded must
	// be of its time line. Manager.Observer is told every decision after the Events and
	// the metrics, and before Observers.
	Manager eviction.Options
	// Observers are told every decision too, after Manager.Observer. Those of them, and
	// Manager.Observer, that also implement [DeleteObserver] are told how each pod went.
	Observers []eviction.Observer
	// WrapDeleter, if not nil, wraps the Deleter the Mode chose (ModeDryRun has none).
	WrapDeleter func(eviction.Deleter) eviction.Deleter
	// WaitIdle, if true, makes [Controller.WaitIdle] available, for tests.
	WaitIdle bool
	// Metrics, if not nil, keeps the controller's metrics: its Instrument's Observer, for
	// the controller "node" with [NodeKubeMetrics], is told every decision after the Events.
	Metrics Meter
	// Elector, if not nil, makes the Controller run its Manager, and Alongside, only while
	// this replica leads.
	Elector Elector
	// Alongside are run with the Manager (another controller's work, to share its Lease),
	// each in a goroutine of its own with the Manager's context, and waited for with it.
	// One that returns an error before its context ends stops the Controller, as a failed
	// Manager does.
	Alongside []func(context.Context) error

	// Reachability, if not nil, is the one the client's rest.Config wraps: [Controller.Ready]
	// then fails while the API server does not answer, and when it answers again the
	// evictions that failed for want of an answer are retried at once. Unless
	// Manager.Unreachable is set, it is [IsUnreachable].
	Reachability *Reachability

	// EventClient, if not nil, writes the Events in the client's place: give it a rate
	// limiter of its own.
	EventClient kubernetes.Interface
}

// Controller is a drop-in taint eviction controller: the pod and node informers of a
// SharedInformerFactory feed an [eviction.Manager], which reads their caches through an
// [InformerCache], removes pods through the Deleter of its [Mode], and reports to an
// [EventObserver], the metrics and the caller's Observers. With [Options.Elector], only
// the replica that leads runs the Manager; every replica keeps its caches synced, so a new
// leader starts at once. With Options.Manager.Confirm, a node whose annotation names none
// of its NoExecute taints' keys gets a Warning Event ([UnconfirmedReason]).
//
// It replaces kube's: turn kube-controller-manager's own off
// (--controllers=*,-taint-eviction-controller), or both controllers evict.
//
// Its methods are safe for concurrent use. The zero Controller is not usable: create one
// with [NewController].
type Controller struct {
	client    kubernetes.Interface
	factory   informers.SharedInformerFactory
	informers Informers
	manager   *eviction.Manager
	events    *EventWriter // nil in ModeDryRun
	opts      Options
	handled   []cache.DoneChecker // the event handlers have been handed the initial listing
	synced    chan struct{}
	started   atomic.Bool
	elected   atomic.Bool // the Elector's Run has returned
	handoff   *Handoff    // nil without Options.WaitIdle
}

// NewController wires a Controller over factory, which must not have been started yet; Run
// starts it and shuts it down. ctx gives the logger of the event handlers. It fails when an
// option is out of range, and when opts.Manager.DryRun is set.
func NewController(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory, opts Options) (*Controller, error) {
	if opts.Mode == "" {
		opts.Mode = ModeDelete
	}
	if opts.Manager.DryRun {
		return nil, fmt.Errorf("clientgo: Options.Manager.DryRun is set with Mode %q: ask for a dry run with Mode %q", opts.Mode, ModeDryRun)
	}
	inf, err := NewInformers(factory)
	if err != nil {
		return nil, err
	}
	c := &Controller{client: client, factory: factory, informers: inf, opts: opts, synced: make(chan struct{})}
	if err := c.build(klog.FromContext(ctx)); err != nil {
		return nil, err
	}
	return c, nil
}

// build makes the Manager and connects the informers to it.
func (c *Controller) build(logger klog.Logger) error {
	obs, err := c.observers()
	if err != nil {
		return err
	}
	deleter, err := c.deleter(obs)
	if err != nil {
		return err
	}
	mopts := c.opts.Manager
	mopts.Observer, mopts.DryRun = obs, c.opts.Mode == ModeDryRun
	if c.opts.Reachability != nil && mopts.Unreachable == nil {
		mopts.Unreachable = IsUnreachable
	}
	c.manager, err = eviction.New(deleter, managerCache(NewInformerCache(c.informers)), mopts)
	if err != nil {
		return fmt.Errorf("clientgo: %w", err)
	}
	var u Updater = c.manager
	if c.opts.WaitIdle {
		c.handoff = NewHandoff(c.client, c.manager)
		u = c.handoff
	}
	if c.opts.Manager.Confirm.Fraction > 0 && c.events != nil {
		u = confirmCheck{Updater: u, recorder: c.events}
	}
	c.handled, err = c.informers.AddHandlers(u, logger)
	return err
}

// observers returns who is told every decision, in order: the Events, the metrics,
// Manager.Observer and Observers.
func (c *Controller) observers() (eviction.Observers, error) {
	obs := eviction.Observers{}
	if c.opts.Mode != ModeDryRun {
		ec := c.opts.EventClient
		if ec == nil {
			ec = c.client
		}
		c.events = NewEventWriter(ec, EventWriterOptions{Clock: c.opts.Manager.Clock})
		obs = append(obs, NewEventObserver(c.events, EventObserverOptions{}))
	}
	if c.opts.Metrics != nil {
		m, err := c.opts.Metrics.Instrument(Instrumented{Controller: "node", Kube: NodeKubeMetrics, Clock: c.opts.Manager.Clock,
			Stats:      func() eviction.Stats { return c.manager.Stats() }, // the Manager is made after
			ActWorkers: func() int { return c.manager.DeleteWorkers() }})
		if err != nil {
			return nil, fmt.Errorf("clientgo: %w", err)
		}
		obs = append(obs, m)
	}
	if c.opts.Manager.Observer != nil {
		obs = append(obs, c.opts.Manager.Observer)
	}
	return append(obs, c.opts.Observers...), nil
}

// deleter returns the Deleter of the Mode, nil in ModeDryRun, telling those of obs that
// are DeleteObservers how each pod went.
func (c *Controller) deleter(obs eviction.Observers) (eviction.Deleter, error) {
	var delObs DeleteObservers
	for _, o := range obs {
		if d, ok := o.(DeleteObserver); ok {
			delObs = append(delObs, d)
		}
	}
	d, err := c.opts.Mode.NewDeleter(c.client, EvictionDeleterOptions{PDBTimeout: c.opts.PDBTimeout,
		Pods: NewInformerCache(c.informers), Observer: delObs, Clock: c.opts.Manager.Clock})
	if d == nil || err != nil || c.opts.WrapDeleter == nil {
		return d, err
	}
	return c.opts.WrapDeleter(d), nil
}

var errNoHandoff = errors.New("clientgo: Controller.WaitIdle needs Options.WaitIdle")

// WaitIdle is [Handoff.WaitIdle]: for a test on a fake clientset and clock, it waits until
// what the test wrote has reached the Manager and what is due has been done. Without
// [Options.WaitIdle] it returns an error at once.
func (c *Controller) WaitIdle(ctx context.Context) error {
	if c.handoff == nil {
		return errNoHandoff
	}
	return c.handoff.WaitIdle(ctx)
}

// Manager returns the controller's Manager, for its Pending and Backlog.
func (c *Controller) Manager() *eviction.Manager { return c.manager }

// Events returns what the controller did with its Events so far (all zero in
// ModeDryRun).
func (c *Controller) Events() EventCounts {
	if c.events == nil {
		return EventCounts{}
	}
	return c.events.Counts()
}

// Informers returns the controller's informers, for a program that wants to read their
// caches or add handlers of its own.
func (c *Controller) Informers() Informers { return c.informers }

// Synced is closed once the informers' caches have synced and their handlers have handed
// every node and pod of the initial listing to the Manager.
func (c *Controller) Synced() <-chan struct{} { return c.synced }

// Run runs the controller until ctx is done: it starts the event recording and the
// informers, waits for the caches, and runs the Manager (with leader election, only while
// it holds the Lease). Before it returns, it waits for all it started: the Manager first
// (the Lease is released only then), the EventWriter (Events still queued are not
// written), then the informers. The Manager logs through ctx's logger.
//
// Run returns nil when ctx ends it; [ErrLeaseLost] when the lead was lost; an error
// wrapping the failure when the Manager (with an [eviction.PanicError], when a method of
// its Cache or Observer panics) or one of Options.Alongside failed, after it has stopped
// the rest and released the Lease; another error if the caches never synced for another
// reason. A Controller runs once.
func (c *Controller) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("clientgo: Controller.Run called more than once")
	}
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		c.factory.Shutdown()
		logger.V(1).Info("Stopped")
	}()
	failed := c.start(ctx, cancel, &wg)
	c.factory.StartWithContext(ctx)
	if err := c.waitForCaches(ctx); err != nil {
		if ctx.Err() != nil {
			return leadFailure(failed)
		}
		return fmt.Errorf("clientgo: waiting for the informers' caches: %w", err)
	}
	logger.V(1).Info("Caches synced", "mode", c.opts.Mode)
	c.manager.Synced() // every node is counted: the brake and Confirm may let evictions go
	close(c.synced)
	if c.opts.Elector != nil {
		defer c.elected.Store(true)
		return c.opts.Elector.Run(ctx, c.lead)
	}
	<-ctx.Done()
	return leadFailure(failed)
}

// start starts, in wg, the EventWriter, the Reachability's Run and, without leader
// election, the Manager, which works through the initial listing while the rest of it
// still arrives. A failure of the Manager is sent on the returned channel, and cancels ctx.
func (c *Controller) start(ctx context.Context, cancel context.CancelFunc, wg *sync.WaitGroup) <-chan error {
	if c.events != nil {
		wg.Go(func() { _ = c.events.Run(ctx) })
	}
	if r := c.opts.Reachability; r != nil {
		wg.Go(func() {
			_ = r.Run(ctx, c.opts.Manager.Clock, ReadyzProbe(c.client), func() { c.manager.RetryUnreachable() })
		})
	}
	failed := make(chan error, 1)
	if c.opts.Elector == nil {
		wg.Go(func() {
			if err := c.lead(ctx); err != nil {
				failed <- err
				cancel()
			}
		})
	}
	return failed
}

// waitForCaches waits for every informer of the factory (another controller's too) to
// sync, then for this one's handlers to have the initial listing.
func (c *Controller) waitForCaches(ctx context.Context) error {
	if err := c.factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		return err
	}
	if !cache.WaitFor(ctx, "", c.handled...) {
		return context.Cause(ctx)
	}
	return nil
}

// leadFailure returns the failure lead sent on failed, if any: Run's context ended for it.
func leadFailure(failed <-chan error) error {
	select {
	case err := <-failed:
		return err
	default:
		return nil
	}
}

// lead runs the Manager and Options.Alongside until ctx is done or one of them fails, and
// returns the failures.
func (c *Controller) lead(ctx context.Context) error {
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	var failures []error
	fail := func(err error) {
		if err == nil || lctx.Err() != nil {
			return // stopped, not failed
		}
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
		stop()
	}
	var wg sync.WaitGroup
	for _, f := range c.opts.Alongside {
		wg.Go(func() { fail(f(lctx)) })
	}
	fail(c.manager.Run(lctx))
	stop()
	wg.Wait()
	if err := errors.Join(failures...); err != nil {
		return fmt.Errorf("clientgo: stopped: %w", err)
	}
	return nil
}

// Ready returns nil when the controller is ready: its caches have synced, the API server
// answers (with [Options.Reachability]) and, with leader election, the Elector is ready or,
// its caches synced, Run is about to call the Elector's Run ([ErrNotElecting] until then).
// It does not block.
func (c *Controller) Ready() error {
	select {
	case <-c.synced:
	default:
		return errors.New("clientgo: caches not synced")
	}
	if c.opts.Reachability != nil {
		if err := c.opts.Reachability.Err(); err != nil {
			return err
		}
	}
	if c.opts.Elector != nil {
		err := c.opts.Elector.Ready()
		if errors.Is(err, ErrNotElecting) && !c.elected.Load() {
			return nil // synced: Run calls the Elector's Run next
		}
		return err
	}
	return nil
}

// Healthy returns nil unless the controller should be restarted: with leader election, when
// the Elector says so.
func (c *Controller) Healthy() error {
	if c.opts.Elector != nil {
		return c.opts.Elector.Healthy()
	}
	return nil
}

// Leading reports whether the Manager runs: without leader election, once Run has started;
// with it, while this replica holds the Lease.
func (c *Controller) Leading() bool {
	if c.opts.Elector != nil {
		return c.opts.Elector.Leading()
	}
	return c.started.Load()
}
