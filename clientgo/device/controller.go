package device

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// Options configures a [Controller]. The zero value deletes as kube's device taint
// eviction controller does (in two requests), with the engine's defaults, no budget and no
// leader election.
type Options struct {
	// Mode is how pods are removed: clientgo.ModeDelete ("" too), ModeEvict (the Eviction
	// API, so that PodDisruptionBudgets are honoured) or ModeDryRun (reports only: no
	// deletes, no Events, no rule status).
	Mode clientgo.Mode
	// PDBTimeout is clientgo.EvictionDeleterOptions.PDBTimeout, for ModeEvict.
	PDBTimeout time.Duration
	// Engine is the engine's options, with these rules: Tolerations.Rules is always
	// tolerations.DeviceRules; DryRun must be false (Mode says it); Observer, if not nil,
	// is told every decision after the Events and the metrics; Clock is the Controller's
	// one clock (nil means the real one): the engine's, the deleters', the Events', the
	// metrics', the rules' status's, the census's, the discovery's retries and
	// Reachability's probes. On a fake clock, the taints' TimeAdded must be of the fake
	// clock's time line: one of the real clock on a fake clock set after it counts as long
	// past, and evicts at once. Confirm.Census must be nil: with Confirm.Fraction set, the
	// controller counts what each DeviceTaintRule, and each pool's taints, would evict (see
	// the package documentation, "Holding a rule until it is confirmed").
	Engine engine.Options
	// StatusPeriod is kube's rule status period: how long after an eviction, or a change of
	// a pod that a rule makes due, the rule's status is written, and the shortest time
	// between two writes of one generation (see the Reason constants); and how often the
	// census of Engine.Confirm counts every scope again. 0 means [DefaultStatusPeriod].
	StatusPeriod time.Duration
	// Observers are told every decision too, after Engine.Observer. Those that implement
	// clientgo.DeleteObserver are told how each pod went.
	Observers []engine.Observer
	// EventClient, if not nil, is the client the Events are written through; nil means the
	// controller's client. Give it a rate limiter of its own, so that the Events never take
	// the tokens of an eviction's requests: see clientgo.EventWriter.
	EventClient kubernetes.Interface
	// Elector, if not nil, makes Run lead (evict, record Events, write the rules' status)
	// only while this replica leads: package clientgo/lease's Elector, on a
	// coordination.k8s.io Lease. Leave it nil for a Controller whose Lead runs alongside a
	// clientgo.Controller: that one's Elector decides.
	Elector clientgo.Elector
	// Metrics, if not nil, keeps the controller's metrics: the Observer its Instrument
	// returns for the controller "device", with kube's device taint eviction controller's
	// metric names ([KubeMetrics]), is told every decision after the Events and, as a
	// clientgo.DeleteObserver, how each pod went. Package clientgo/metrics' Meter keeps
	// them on a Prometheus registry, which the node side's may share. nil keeps no
	// metrics.
	Metrics clientgo.Meter
	// PodGroups says whether the claims reserved for, or made for, a PodGroup bind the
	// pods of that group; see [PodGroupMode]. The zero value, PodGroupsAuto, asks the API
	// server's discovery when the controller starts to lead, before it evicts anything,
	// retrying every second until it answers; a discovery that is refused (403, 401) counts
	// as not served.
	PodGroups PodGroupMode
	// Reachability, if not nil, is the one whose transport wrapper the client's rest.Config
	// carries (clientgo.Reachability.Wrap), as for clientgo.Options.Reachability, which it
	// may be too (one serves both sides under -controllers=node,device): Ready fails while
	// the API server does not answer; Run (and Lead, alongside another controller) probes
	// it only while it does not; when it answers again, the evictions whose deletes failed
	// for want of an answer are retried at once (engine.Engine.RetryUnreachable). Unless
	// Engine.Unreachable is set, it is clientgo.IsUnreachable.
	Reachability *clientgo.Reachability
}

// Controller is a drop-in for kube's device taint eviction controller: the pod,
// ResourceClaim, ResourceSlice and DeviceTaintRule informers of a SharedInformerFactory feed
// an [engine.Engine] through a [Source]; pods are removed by a [clientgo.PodDeleter] or
// [clientgo.EvictionDeleter] with kube's device condition; a [clientgo.EventObserver]
// records kube's Events ([Events]); the DeviceTaintRules' status says what each rule
// evicts, as kube writes it; the engine's budgets may hold evictions back, among them
// Confirm, which holds a rule that would evict too many pods until an operator confirms it.
//
// As a drop-in it replaces kube's: turn kube-controller-manager's own off
// (--controllers=*,-device-taint-eviction-controller), or both controllers evict.
//
// Run it alone ([Controller.Run]), or give its [Controller.Lead] to a [clientgo.Controller]
// of the same factory in [clientgo.Options].Alongside, to run it under that one's Lease. Its
// methods are safe for concurrent use. The zero Controller is not usable: create one with
// [NewController].
type Controller struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	inf     Informers
	src     *Source
	eng     *engine.Engine[*v1.Pod]
	status  *ruleStatus
	census  *census               // Engine.Confirm's; nil without it
	events  *clientgo.EventWriter // nil in ModeDryRun
	notes   engine.Observer       // the EventObserver; nil in ModeDryRun
	opts    Options
	clock   clock.Clock
	elect   clientgo.Elector
	metrics engine.Observer // nil without Options.Metrics

	synced           chan struct{}
	syncOnce         sync.Once
	started, leading atomic.Bool
}

// NewController wires a Controller over factory, which must not have been started yet: it
// registers the informers (see [NewInformers]) and their handlers. ctx gives only the
// handlers' logger. It fails when an option is out of range.
func NewController(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory, opts Options) (*Controller, error) {
	if opts.Mode == "" {
		opts.Mode = clientgo.ModeDelete
	}
	switch {
	case opts.Engine.DryRun:
		return nil, fmt.Errorf("device: Options.Engine.DryRun is set: ask for a dry run with Mode %q", clientgo.ModeDryRun)
	case opts.Engine.Confirm.Census != nil:
		return nil, errors.New("device: Options.Engine.Confirm.Census is set: the controller counts for Confirm")
	case opts.StatusPeriod < 0:
		return nil, fmt.Errorf("device: Options.StatusPeriod is negative: %s", opts.StatusPeriod)
	case opts.PodGroups != PodGroupsAuto && opts.PodGroups != PodGroupsOn && opts.PodGroups != PodGroupsOff:
		return nil, fmt.Errorf("device: unknown Options.PodGroups %q (want %q, %q or %q)", opts.PodGroups, PodGroupsAuto, PodGroupsOn, PodGroupsOff)
	}
	if opts.StatusPeriod == 0 {
		opts.StatusPeriod = DefaultStatusPeriod
	}
	clk := opts.Engine.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	inf, err := NewInformers(factory)
	if err != nil {
		return nil, err
	}
	c := &Controller{client: client, factory: factory, inf: inf, src: NewSource(inf), opts: opts, clock: clk, synced: make(chan struct{})}
	c.src.FollowPodGroups(opts.PodGroups == PodGroupsOn)
	c.status = newRuleStatus(client, c.src, clk, opts.StatusPeriod)
	eopts := opts.Engine
	eopts.Clock, eopts.DryRun = clk, opts.Mode == clientgo.ModeDryRun
	eopts.Tolerations = deviceRules
	if opts.Reachability != nil && eopts.Unreachable == nil {
		eopts.Unreachable = clientgo.IsUnreachable
	}
	if eopts.Confirm.Fraction > 0 {
		c.census = newCensus(eopts.Confirm, c.src, clk, opts.StatusPeriod, func(scope string) { c.eng.Recounted(scope) })
		c.status.census, eopts.Confirm.Census = c.census, c.census
		c.census.flipped = func(scope string) {
			if name, ok := strings.CutPrefix(scope, ruleScope("")); ok {
				c.status.dueNow(name)
			}
		}
	}
	obs := engine.Observers{}
	if opts.Mode != clientgo.ModeDryRun {
		ec := opts.EventClient
		if ec == nil {
			ec = client
		}
		c.events = clientgo.NewEventWriter(ec, clientgo.EventWriterOptions{Component: Component, Clock: clk})
		c.notes = clientgo.NewEventObserver(c.events, clientgo.EventObserverOptions{Events: Events})
		obs = append(obs, c.notes)
	}
	if opts.Metrics != nil {
		m, err := opts.Metrics.Instrument(clientgo.Instrumented{Controller: "device", Kube: KubeMetrics, Clock: clk,
			Stats: func() engine.Stats { return c.eng.Stats() }, ActWorkers: func() int { return c.eng.ActWorkers() }})
		if err != nil {
			return nil, fmt.Errorf("device: %w", err)
		}
		c.metrics = m
		obs = append(obs, m)
	}
	if opts.Engine.Observer != nil {
		obs = append(obs, opts.Engine.Observer)
	}
	eopts.Observer = append(obs, opts.Observers...)
	act, err := c.actuator(clk)
	if err != nil {
		return nil, err
	}
	if c.eng, err = engine.New(act, engine.Source[*v1.Pod](c.src), eopts); err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	c.src.changed = func(scope string) {
		if c.census != nil {
			c.census.changed(scope)
		}
		if name, ok := strings.CutPrefix(scope, ruleScope("")); ok {
			c.status.ruleChanged(name)
		}
	}
	c.src.touched = c.status.touched
	c.elect = opts.Elector
	if err := c.src.AddHandlers(inf, c.eng, klog.FromContext(ctx)); err != nil {
		return nil, err
	}
	return c, nil
}

// actuator returns the Mode's deleter as the engine's Actuator; nil in ModeDryRun.
func (c *Controller) actuator(clk clock.PassiveClock) (engine.Actuator, error) {
	var obs clientgo.DeleteObservers
	for _, o := range append([]engine.Observer{c.notes, c.metrics, c.opts.Engine.Observer}, c.opts.Observers...) {
		if d, ok := o.(clientgo.DeleteObserver); ok {
			obs = append(obs, d)
		}
	}
	var d eviction.Deleter
	switch c.opts.Mode {
	case clientgo.ModeDryRun:
		return nil, nil
	case clientgo.ModeDelete:
		d = clientgo.NewPodDeleter(c.client, clientgo.PodDeleterOptions{Pods: c.src, Observer: obs, Clock: clk, Reason: DisruptionReason, Message: DisruptionMessage})
	case clientgo.ModeEvict:
		ed, err := clientgo.NewEvictionDeleter(c.client, clientgo.EvictionDeleterOptions{PDBTimeout: c.opts.PDBTimeout, Pods: c.src, Observer: obs, Clock: clk, Reason: DisruptionReason, Message: DisruptionMessage})
		if err != nil {
			return nil, fmt.Errorf("device: %w", err)
		}
		d = ed
	default:
		return nil, fmt.Errorf("device: unknown Mode %q (want %s, %s or %s)", c.opts.Mode, clientgo.ModeDelete, clientgo.ModeEvict, clientgo.ModeDryRun)
	}
	return eviction.PodActuator(c.status.counting(d)), nil
}

// Engine returns the controller's engine, for its Pending, Backlog and WaitIdle.
func (c *Controller) Engine() *engine.Engine[*v1.Pod] { return c.eng }

// Informers returns the controller's informers.
func (c *Controller) Informers() Informers { return c.inf }

// Synced is closed once the informers' caches have synced and their handlers have handed
// the initial listing to the engine: in [Controller.Run], or in [Controller.Lead] when a
// [clientgo.Controller] runs it alongside (a standby replica's, then, only once it leads).
func (c *Controller) Synced() <-chan struct{} { return c.synced }

// Lead runs what the leader does until ctx is done: once the informers have synced (and,
// with PodGroupsAuto, discovery has said whether PodGroups are served), the census of
// Engine.Confirm, the rules' status (each rule counted once before the engine starts) and
// the engine; from the start, the Events and, with [Options.Reachability], its Run. As
// kube's controller does, it evicts only from synced caches: a cluster listed in part can
// show a device with the taint of a pool's older generation whose newer one has not
// arrived yet. It returns when all of them have stopped: nil when ctx ended it, or, when
// the engine failed (a method of the Source or of an Observer panicked: an
// [engine.PanicError]), the engine's error, having stopped the rest. It needs the
// informers running: [Controller.Run] starts them, or the [clientgo.Controller] whose
// Options.Alongside it is given, which stops too when Lead fails. A Controller leads once:
// a second call returns an error.
func (c *Controller) Lead(ctx context.Context) error {
	if !c.leading.CompareAndSwap(false, true) {
		return errors.New("device: Controller.Lead called more than once")
	}
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	if c.events != nil {
		wg.Go(func() { _ = c.events.Run(lctx) })
	}
	if r := c.opts.Reachability; r != nil {
		wg.Go(func() { _ = r.Run(lctx, c.clock, clientgo.ReadyzProbe(c.client), func() { c.eng.RetryUnreachable() }) })
	}
	var err error
	if c.waitSynced(lctx) && c.discoverPodGroups(lctx) {
		if c.census != nil {
			c.census.goLive()
			wg.Go(func() { c.census.run(lctx) })
		}
		if c.opts.Mode != clientgo.ModeDryRun {
			c.status.start()
			wg.Go(func() { c.status.run(lctx) })
		}
		err = c.eng.Run(lctx)
	}
	stop()
	wg.Wait()
	if err == nil || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("device: stopped: %w", err)
}

// discoverPodGroups asks the API server whether it serves PodGroups, with PodGroupsAuto,
// until it answers or ctx is done, and reports which; it sets the Source to follow them if
// it does. Other modes were set in NewController.
func (c *Controller) discoverPodGroups(ctx context.Context) bool {
	if c.opts.PodGroups != PodGroupsAuto {
		return true
	}
	logger := klog.FromContext(ctx)
	for {
		served, err := servesPodGroups(ctx, c.client.Discovery())
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			// An answer, and no retry will change it: not followed, rather than no eviction.
			logger.Info("Discovery refused: PodGroup reservations are not followed; set Options.PodGroups to say", "err", err)
			return true
		}
		if err == nil {
			c.src.FollowPodGroups(served)
			logger.V(1).Info("Discovered whether the API server serves PodGroups: PodGroup reservations are followed if so", "served", served)
			return true
		}
		logger.V(1).Info("Asking the API server whether it serves PodGroups failed; will retry", "err", err)
		t := c.clock.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
		}
	}
}

// waitSynced waits until the informers and the handlers have synced, or ctx is done, and
// reports which. It waits on their channels, without polling, as kube's controller does:
// client-go's WaitForCacheSync would look every 100 ms, and evict that much late.
func (c *Controller) waitSynced(ctx context.Context) bool {
	if !cache.WaitFor(ctx, "", c.src.synced...) {
		return false
	}
	c.syncOnce.Do(func() { close(c.synced) })
	return true
}

// Run runs the controller alone until ctx is done: it starts the informers, waits for
// their caches, and leads (with leader election, only while it holds the Lease). Before
// it returns, it stops the leader's work, then releases the Lease, then stops the
// informers. It returns nil when ctx ends it, [clientgo.ErrLeaseLost] when the Lease was
// lost, Lead's error when the engine failed (having stopped the rest and released the
// Lease), or an error if the caches never synced. A Controller runs once.
func (c *Controller) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("device: Controller.Run called more than once")
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		c.factory.Shutdown()
	}()
	failed := make(chan error, 1)
	if r := c.opts.Reachability; r != nil && c.elect != nil {
		// A standby's readiness: the server seen back by a probe, not only by its watches.
		wg.Go(func() { _ = r.Run(ctx, c.clock, clientgo.ReadyzProbe(c.client), nil) })
	}
	if c.elect == nil {
		wg.Go(func() {
			if err := c.Lead(ctx); err != nil {
				failed <- err
				cancel()
			}
		})
	}
	c.factory.StartWithContext(ctx)
	if !c.waitSynced(ctx) {
		if ctx.Err() != nil {
			return leadFailure(failed)
		}
		return errors.New("device: the informers' caches did not sync")
	}
	if c.elect != nil {
		return c.elect.Run(ctx, c.Lead)
	}
	<-ctx.Done()
	return leadFailure(failed)
}

// leadFailure returns the failure Lead sent on failed, if any: Run's context ended for it.
func leadFailure(failed <-chan error) error {
	select {
	case err := <-failed:
		return err
	default:
		return nil
	}
}

// Ready returns nil once the caches have synced, while the API server answers (with
// [Options.Reachability]; see [clientgo.Reachability.Err]) and, with leader election, while
// the controller leads or waits for the Lease. It does not block.
func (c *Controller) Ready() error {
	select {
	case <-c.synced:
	default:
		return errors.New("device: caches not synced")
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

// Healthy returns nil unless the controller should be restarted (its Lease lost, or not
// renewed in time).
func (c *Controller) Healthy() error {
	if c.elect != nil {
		return c.elect.Healthy()
	}
	return nil
}

// Handler returns the controller's /healthz, /readyz and /metrics (served by metrics, when
// not nil: [github.com/taintevict/taintevict/clientgo/metrics.Handler]); see
// [clientgo.ProbeHandler].
func (c *Controller) Handler(metrics http.Handler) http.Handler {
	return clientgo.ProbeHandler(c.Healthy, c.Ready, metrics)
}
