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
	// ModeEvict removes pods with an [EvictionDeleter], which honours
	// PodDisruptionBudgets.
	ModeEvict Mode = "evict"
	// ModeDryRun removes nothing: it deletes no pod, marks none and records no Events. The
	// metrics and the Observers are still told every decision, a due eviction as
	// Succeeded with dryRun true.
	ModeDryRun Mode = "dry-run"
)

// Options configures a [Controller]. The zero value deletes as kube does, with the
// Manager's defaults, no metrics and no leader election.
type Options struct {
	// Mode is how pods are removed; "" means ModeDelete. ModeDryRun is the one way to ask
	// for a dry run: it sets the Manager's DryRun, calls no Deleter and records no Events.
	Mode Mode
	// PDBTimeout is [EvictionDeleterOptions.PDBTimeout], for ModeEvict.
	PDBTimeout time.Duration
	// Manager is the Manager's options, every one of them (workers, delete timeout,
	// Backoff, DeadlineSource, ComparisonOperators, the budgets against mass eviction...),
	// as [eviction.Options] documents them, with three rules:
	//   - Manager.DryRun must be false (NewController fails otherwise): Mode says it, so
	//     that the Deleter, the Events and the Manager cannot disagree.
	//   - Manager.Clock is the Controller's one clock (nil means the real one): the
	//     Manager's, the Deleters' (the condition's lastTransitionTime, PDBTimeout), the
	//     Events', the metrics', and that of Reachability's probes, which has no clock of
	//     its own. On a fake clock, the taints' TimeAdded must be of the fake clock's time
	//     line: a TimeAdded of the real clock on a fake clock set after it counts as long
	//     past, and evicts at once; one after the fake clock's now counts from when the
	//     Manager first saw the taint. Leader election (package clientgo/lease) runs on
	//     the real clock, as client-go's does.
	//   - Manager.Observer, if not nil, is told every decision after the Events and the
	//     metrics, and before Observers; if it also implements [DeleteObserver], it is told
	//     how each pod went.
	Manager eviction.Options
	// Observers are told every decision too, after the Events, the metrics and
	// Manager.Observer. Those that also implement [DeleteObserver] are told how each pod
	// went.
	Observers []eviction.Observer
	// WrapDeleter, if not nil, wraps the Deleter the Mode chose (for an audit trail, or a
	// test's hook). It is not called in ModeDryRun.
	WrapDeleter func(eviction.Deleter) eviction.Deleter
	// WaitIdle, if true, makes [Controller.WaitIdle] available: the informers hand the
	// Manager its updates through a [Handoff], which keeps a pointer to each node and pod it
	// handed on. For tests and demonstrations.
	WaitIdle bool
	// Metrics, if not nil, keeps the controller's metrics: the Observer its Instrument
	// returns for the controller "node", with kube's taint eviction controller's metric
	// names ([NodeKubeMetrics]), is told every decision after the Events and, as a
	// [DeleteObserver], how each pod went. Package clientgo/metrics' Meter keeps them on a
	// Prometheus registry. nil keeps no metrics.
	Metrics Meter
	// Elector, if not nil, makes the Controller run its Manager, and Alongside, only while
	// this replica leads: package clientgo/lease's Elector, on a coordination.k8s.io Lease.
	// nil runs them from the start.
	Elector Elector
	// Alongside are run with the Manager, each in a goroutine of its own, with the
	// Manager's context: started with it (when Run starts, or on taking the Lease) and
	// waited for before Run returns (or the Lease is released). Another controller on the
	// same factory runs its work here to share this one's Lease: the device taint
	// controller's Lead, for one (package clientgo/device). Each is to return when its
	// context ends; one that returns an error before that has failed, and stops the
	// Controller as a failed Manager does (see [Controller.Run]).
	Alongside []func(context.Context) error

	// Reachability, if not nil, is the one whose transport wrapper the client's
	// rest.Config carries ([Reachability.Wrap]): [Controller.Ready] then fails while the
	// API server does not answer, Run probes the server (GET /readyz, every
	// ReachabilityOptions.ProbeInterval) only while it does not, and when it answers again
	// the evictions whose deletes failed for want of an answer are retried at once
	// ([eviction.Manager.RetryUnreachable]), rather than after a backoff that grew during
	// the outage. Unless Manager.Unreachable is set, it is [IsUnreachable]. One
	// Reachability may serve several controllers of the client (the device side's too,
	// through its own Options.Reachability, alone or Alongside).
	Reachability *Reachability

	// EventClient, if not nil, is the client the Events are written through; nil means the
	// controller's client. Give it a rate limiter of its own (a clientset made from a
	// rest.Config with its own QPS and Burst), so that the Events never take the tokens of
	// an eviction's requests: see [EventWriter].
	EventClient kubernetes.Interface
}

// Controller is a drop-in taint eviction controller: the pod and node informers of a
// SharedInformerFactory feed an [eviction.Manager], which reads their caches through an
// [InformerCache], removes pods through the Deleter of its [Mode], and reports to an
// [EventObserver] (kube's Events, written in order by an [EventWriter], which drops none
// for want of room), the metrics of [Options.Metrics] and the caller's Observers. With
// [Options.Elector], only the replica that leads (holds the Lease) runs the Manager; every
// replica keeps its caches synced, so a new leader starts at once, and since deadlines
// count from each taint's TimeAdded, it evicts at the same times as the old one. With
// Options.Manager.Confirm, a node whose [eviction.ConfirmAnnotation] does not name one of
// its NoExecute taints' keys gets a Warning Event ([UnconfirmedReason]) when the
// annotation or the taints change: a mistyped key confirms nothing, and the operator who
// wrote it learns why the evictions stay held.
//
// As a drop-in it replaces kube's: turn kube-controller-manager's own off
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
	elect     Elector  // nil without leader election
	handoff   *Handoff // nil without Options.WaitIdle
}

// NewController wires a Controller over factory, which must not have been started yet; Run
// starts it and shuts it down. ctx gives only the logger of the event handlers. It fails
// when an option is out of range, and when opts.Manager.DryRun is set (use ModeDryRun).
func NewController(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory, opts Options) (*Controller, error) {
	if opts.Mode == "" {
		opts.Mode = ModeDelete
	}
	if opts.Manager.DryRun {
		return nil, fmt.Errorf("clientgo: Options.Manager.DryRun is set with Mode %q: ask for a dry run with Mode %q", opts.Mode, ModeDryRun)
	}
	logger := klog.FromContext(ctx)
	inf, err := NewInformers(factory)
	if err != nil {
		return nil, err
	}
	c := &Controller{client: client, factory: factory, informers: inf, opts: opts, synced: make(chan struct{})}
	if err := c.build(logger); err != nil {
		return nil, err
	}
	return c, nil
}

// build makes the observers, the Deleter, the Manager and the elector, and connects the
// informers to the Manager.
func (c *Controller) build(logger klog.Logger) error {
	obs := eviction.Observers{}
	var delObs DeleteObservers
	if c.opts.Mode != ModeDryRun {
		ec := c.opts.EventClient
		if ec == nil {
			ec = c.client
		}
		c.events = NewEventWriter(ec, EventWriterOptions{Clock: c.opts.Manager.Clock})
		ev := NewEventObserver(c.events, EventObserverOptions{})
		obs, delObs = append(obs, ev), append(delObs, ev)
	}
	if c.opts.Metrics != nil {
		m, err := c.opts.Metrics.Instrument(Instrumented{Controller: "node", Kube: NodeKubeMetrics,
			Clock: c.opts.Manager.Clock, Stats: c.stats, ActWorkers: c.actWorkers})
		if err != nil {
			return fmt.Errorf("clientgo: %w", err)
		}
		obs = append(obs, m)
		if d, ok := m.(DeleteObserver); ok {
			delObs = append(delObs, d)
		}
	}
	callers := c.opts.Observers
	if c.opts.Manager.Observer != nil {
		callers = append([]eviction.Observer{c.opts.Manager.Observer}, callers...)
	}
	for _, o := range callers {
		obs = append(obs, o)
		if d, ok := o.(DeleteObserver); ok {
			delObs = append(delObs, d)
		}
	}
	deleter, err := c.deleter(delObs)
	if err != nil {
		return err
	}
	mopts := c.opts.Manager
	mopts.Observer, mopts.DryRun = obs, c.opts.Mode == ModeDryRun
	if c.opts.Reachability != nil && mopts.Unreachable == nil {
		mopts.Unreachable = IsUnreachable
	}
	c.manager, err = eviction.New(deleter, managerCache{NewInformerCache(c.informers)}, mopts)
	if err != nil {
		return fmt.Errorf("clientgo: %w", err)
	}
	c.elect = c.opts.Elector
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

// deleter returns the Deleter of the Mode, nil in ModeDryRun.
func (c *Controller) deleter(obs DeleteObservers) (eviction.Deleter, error) {
	var o DeleteObserver
	if len(obs) > 0 {
		o = obs
	}
	d, err := c.opts.Mode.NewDeleter(c.client, EvictionDeleterOptions{PDBTimeout: c.opts.PDBTimeout,
		Pods: NewInformerCache(c.informers), Observer: o, Clock: c.opts.Manager.Clock})
	if d == nil || err != nil || c.opts.WrapDeleter == nil {
		return d, err
	}
	return c.opts.WrapDeleter(d), nil
}

// stats and actWorkers read the Manager for the metrics; the Manager is made after them.
func (c *Controller) stats() eviction.Stats { return c.manager.Stats() }

func (c *Controller) actWorkers() int { return c.manager.DeleteWorkers() }

// WaitIdle waits until the Manager has been handed every node and pod as the API server
// holds them now, and is idle, with no change on the server meanwhile; or until ctx is
// done (its error). It is [Handoff.WaitIdle]: the supported way for a test on a fake
// clientset, and on a fake clock (Options.Manager.Clock), to wait until what it wrote has
// reached the Manager and what is due has been done, without guessing. It needs
// [Options.WaitIdle], and returns an error at once without it.
func (c *Controller) WaitIdle(ctx context.Context) error {
	if c.handoff == nil {
		return errNoHandoff
	}
	return c.handoff.WaitIdle(ctx)
}

// Manager returns the controller's Manager, for its Pending and Backlog.
func (c *Controller) Manager() *eviction.Manager { return c.manager }

// Events returns what the controller did with its Events so far: queued, written and
// dropped (all zero in ModeDryRun).
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
// every node and pod of the initial listing to the Manager, which may still be working
// through them (or, on a standby, waits for the Lease).
func (c *Controller) Synced() <-chan struct{} { return c.synced }

// Run runs the controller until ctx is done: it starts the event recording and the
// informers, waits for the caches, and runs the Manager (with leader election, only while
// it holds the Lease). Before it returns, it stops all of them and waits for their
// goroutines, the Manager and the EventWriter first, so that no Deleter call or Event is
// under way when the informers go, and only then releases the Lease (Events still queued
// then are not written; [Controller.Events] counts them). The Manager logs through ctx's
// logger ([klog.FromContext]).
//
// Run returns nil when ctx ends it; [ErrLeaseLost] when the lead was lost (the Manager was
// stopped at once); an error wrapping the failure when the Manager or one of
// Options.Alongside failed (returned an error before it was stopped: the Manager does when
// a method of its Cache or Observer panics, with an [eviction.PanicError]), after it has
// stopped the rest and released the Lease; another error if the caches never synced for
// another reason. A Controller runs once.
func (c *Controller) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("clientgo: Controller.Run called more than once")
	}
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()            // Manager.Run and EventWriter.Run have returned
		c.factory.Shutdown() // waits for the informers' goroutines
		logger.V(1).Info("Stopped")
	}()

	if c.events != nil {
		wg.Go(func() { _ = c.events.Run(ctx) })
	}
	if r := c.opts.Reachability; r != nil {
		wg.Go(func() {
			_ = r.Run(ctx, c.opts.Manager.Clock, ReadyzProbe(c.client), func() { c.manager.RetryUnreachable() })
		})
	}
	failed := make(chan error, 1)
	if c.elect == nil {
		// The Manager keeps the updates that arrive before it runs; starting it first means
		// it works through the initial listing while the rest of it still arrives.
		wg.Go(func() {
			if err := c.lead(ctx); err != nil {
				failed <- err
				cancel()
			}
		})
	}
	c.factory.StartWithContext(ctx)
	// Both wait on the informers' channels, without polling: every informer of the
	// factory (another controller's too), then this one's handlers.
	err := c.factory.WaitForCacheSyncWithContext(ctx).AsError()
	if err == nil && !cache.WaitFor(ctx, "", c.handled...) {
		err = context.Cause(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return leadFailure(failed)
		}
		return fmt.Errorf("clientgo: waiting for the informers' caches: %w", err)
	}
	logger.V(1).Info("Caches synced", "mode", c.opts.Mode)
	c.manager.Synced() // every node is counted: the brake and Confirm may let evictions go
	close(c.synced)
	if c.elect != nil {
		return c.elect.Run(ctx, c.lead)
	}
	<-ctx.Done()
	return leadFailure(failed)
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

// lead runs the Manager and Options.Alongside until ctx is done, and waits for all of them.
// One that returns an error before ctx is done failed (the Manager, when its Source or
// Observer panicked): lead then stops the others and returns the failures.
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
// answers (with [Options.Reachability]; see [Reachability.Err]) and, with leader election,
// it holds the Lease or is waiting for it. It does not block.
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
	if c.elect != nil {
		return c.elect.Ready()
	}
	return nil
}

// Healthy returns nil unless the controller should be restarted: with leader election, when
// the Elector says so (the Lease lost, or not renewed in time).
func (c *Controller) Healthy() error {
	if c.elect != nil {
		return c.elect.Healthy()
	}
	return nil
}

// Leading reports whether the Manager runs: without leader election, once Run has started;
// with it, while this replica holds the Lease.
func (c *Controller) Leading() bool {
	if c.elect != nil {
		return c.elect.Leading()
	}
	return c.started.Load()
}
