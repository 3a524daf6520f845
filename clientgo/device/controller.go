package device

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// Kube's device taint eviction controller's name (the Events' source, the rules' status
// field manager), its Events' reason and the condition it sets on a pod before deleting it.
const (
	Component         = "device-taint-eviction-controller"
	EventReason       = "DeviceTaintManagerEviction"
	DisruptionReason  = "DeletionByDeviceTaintManager"
	DisruptionMessage = "Device Taint manager: deleting due to NoExecute taint"
)

// PausedMessage is the message of the Event a [Controller] records when the brake holds a
// pod's eviction back.
const PausedMessage = "Pausing deletion: a budget holds back the evictions of the device taint"

// ConfirmMessage is the message of the Event a [Controller] records when Confirm holds a
// pod's eviction back until an operator confirms the taint.
const ConfirmMessage = "Pausing deletion: the device taint would evict too many pods at once; annotate its DeviceTaintRule (or ResourceSlice) with " +
	eviction.ConfirmAnnotation + "=<taint key> to confirm it"

// Events are kube's device taint eviction controller's Events, which a [Controller]
// records with a [clientgo.EventObserver], at the moments that type says:
//
//   - "Marking for deletion";
//   - "Cancelling deletion", for an eviction cancelled for any reason but the pod's
//     deletion or replacement under its name, about which kube records nothing;
//   - ours, [PausedMessage] and [ConfirmMessage].
var Events = clientgo.Events{
	Reason:     EventReason,
	Marking:    func(engine.Ref) string { return "Marking for deletion" },
	Cancelling: func(engine.Ref) string { return "Cancelling deletion" },
	Pausing:    func(engine.Ref) string { return PausedMessage },
	Confirming: func(engine.Ref) string { return ConfirmMessage },
	Cancels: func(reason engine.Reason) bool {
		return reason != engine.ReasonTargetDeleted && reason != engine.ReasonReplaced
	},
}

// KubeMetrics are the metrics of kube's device taint eviction controller
// (pkg/controller/devicetainteviction/metrics), which a [Controller] with Options.Metrics
// keeps under kube's names (see [clientgo.KubeMetrics]).
var KubeMetrics = clientgo.KubeMetrics{
	Subsystem:     "device_taint_eviction_controller",
	DeletionsHelp: "[ALPHA] Total number of Pods deleted by DeviceTaintEvictionController since its start.",
	DurationHelp:  "[ALPHA] Latency, in seconds, between the time when a device taint effect has been activated and a Pod's deletion via DeviceTaintEvictionController.",
}

// Options configures a [Controller]. The zero value deletes as kube's device taint
// eviction controller does, with the engine's defaults, no budget and no leader election.
type Options struct {
	// Mode is how pods are removed: clientgo.ModeDelete ("" too), ModeEvict (the Eviction
	// API) or ModeDryRun (no deletes, no Events, no rule status).
	Mode clientgo.Mode
	// PDBTimeout is clientgo.EvictionDeleterOptions.PDBTimeout, for ModeEvict.
	PDBTimeout time.Duration
	// Engine is the engine's options, but Tolerations.Rules is always DeviceRules, DryRun and
	// Confirm.Census must not be set (Mode and the controller's census set them), Observer
	// hears each decision after the Events and metrics, and Clock (nil: real) serves all parts.
	Engine engine.Options
	// StatusPeriod is kube's rule status period (see the Reason constants), and how often
	// Engine.Confirm's census counts every scope again. 0 means [DefaultStatusPeriod].
	StatusPeriod time.Duration
	// Observers are told every decision after Engine.Observer; those that implement
	// clientgo.DeleteObserver, how each pod went.
	Observers []engine.Observer
	// EventClient, if not nil, writes the Events instead of the controller's client: give
	// it a rate limiter of its own (see clientgo.EventWriter).
	EventClient kubernetes.Interface
	// Elector, if not nil, makes Run lead only while this replica leads (package
	// clientgo/lease). Leave it nil when Lead runs alongside a clientgo.Controller.
	Elector clientgo.Elector
	// Metrics, if not nil, keeps the metrics of the controller "device", under kube's
	// names too ([KubeMetrics]); nil keeps none.
	Metrics clientgo.Meter
	// PodGroups says whether a PodGroup's claims bind its pods ([PodGroupMode]).
	// PodGroupsAuto asks discovery when the controller starts to lead, before it evicts
	// anything, every second until it answers; a refusal (403, 401) counts as not served.
	PodGroups PodGroupMode
	// Reachability, if not nil, is as clientgo.Options.Reachability (one may serve both
	// sides); Engine.Unreachable, if not set, is then clientgo.IsUnreachable.
	Reachability *clientgo.Reachability
}

// PodGroupMode says whether the device side follows ResourceClaims reserved for, or made
// for, a PodGroup (scheduling.k8s.io) to the pods of that group, as kube's controller does
// with its DRAWorkloadResourceClaims feature gate. Without it, such a claim binds no pod.
type PodGroupMode string

// The PodGroupModes.
const (
	// PodGroupsAuto follows them when discovery says PodGroups are served (Options.PodGroups).
	PodGroupsAuto PodGroupMode = ""
	// PodGroupsOn follows them, as kube with DRAWorkloadResourceClaims on.
	PodGroupsOn PodGroupMode = "on"
	// PodGroupsOff does not, as kube with DRAWorkloadResourceClaims off (its default).
	PodGroupsOff PodGroupMode = "off"
)

// Controller is a drop-in for kube's device taint eviction controller: informers feed an
// [engine.Engine] through a [Source]; pods are removed with kube's device condition and
// [Events]; each DeviceTaintRule's status says what it evicts. Turn kube's own off
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
	census  *census               // nil without Engine.Confirm
	events  *clientgo.EventWriter // nil in ModeDryRun
	opts    Options               // with their defaults
	clock   clock.Clock

	handlers         []cache.DoneChecker // done once the handlers have had the initial listings
	synced           chan struct{}
	syncOnce         sync.Once
	started, leading atomic.Bool
	elected          atomic.Bool // the Elector's Run has returned
}

// NewController wires a Controller over factory, which must not have started yet; ctx
// gives only the handlers' logger. It fails when an option is out of range.
func NewController(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory, opts Options) (*Controller, error) {
	opts, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	inf, err := NewInformers(factory)
	if err != nil {
		return nil, err
	}
	c := &Controller{client: client, factory: factory, inf: inf, src: NewSource(inf), opts: opts, clock: opts.Engine.Clock, synced: make(chan struct{})}
	c.src.FollowPodGroups(opts.PodGroups == PodGroupsOn)
	if c.status, err = newRuleStatus(client, c.src, c.clock, opts.StatusPeriod); err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	eopts := opts.Engine
	eopts.DryRun, eopts.Tolerations = opts.Mode == clientgo.ModeDryRun, deviceRules
	if opts.Reachability != nil && eopts.Unreachable == nil {
		eopts.Unreachable = clientgo.IsUnreachable
	}
	if eopts.Confirm.Fraction > 0 {
		c.census = newCensus(eopts.Confirm, c.src, c.clock, opts.StatusPeriod, c.flipped)
		c.status.census, eopts.Confirm.Census = c.census, c.census
	}
	obs, err := c.observers()
	if err != nil {
		return nil, err
	}
	eopts.Observer = obs
	act, err := c.actuator(obs)
	if err != nil {
		return nil, err
	}
	if c.eng, err = engine.New(act, engine.Source[*v1.Pod](c.src), eopts); err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	c.src.changed, c.src.touched = c.changed, c.status.touched
	if c.handlers, err = c.src.AddHandlers(inf, c.eng, klog.FromContext(ctx)); err != nil {
		return nil, err
	}
	return c, nil
}

// withDefaults returns opts with their defaults, or the error of an option out of range.
func withDefaults(opts Options) (Options, error) {
	opts.Mode = cmp.Or(opts.Mode, clientgo.ModeDelete)
	switch {
	case opts.Mode != clientgo.ModeDelete && opts.Mode != clientgo.ModeEvict && opts.Mode != clientgo.ModeDryRun:
		return opts, fmt.Errorf("device: unknown Mode %q (want %s, %s or %s)", opts.Mode, clientgo.ModeDelete, clientgo.ModeEvict, clientgo.ModeDryRun)
	case opts.Engine.DryRun:
		return opts, fmt.Errorf("device: Options.Engine.DryRun is set: ask for a dry run with Mode %q", clientgo.ModeDryRun)
	case opts.Engine.Confirm.Census != nil:
		return opts, errors.New("device: Options.Engine.Confirm.Census is set: the controller counts for Confirm")
	case opts.StatusPeriod < 0:
		return opts, fmt.Errorf("device: Options.StatusPeriod is negative: %s", opts.StatusPeriod)
	case opts.PodGroups != PodGroupsAuto && opts.PodGroups != PodGroupsOn && opts.PodGroups != PodGroupsOff:
		return opts, fmt.Errorf("device: unknown Options.PodGroups %q (want %q, %q or %q)", opts.PodGroups, PodGroupsAuto, PodGroupsOn, PodGroupsOff)
	}
	opts.StatusPeriod = cmp.Or(opts.StatusPeriod, DefaultStatusPeriod)
	if opts.Engine.Clock == nil {
		opts.Engine.Clock = clock.RealClock{}
	}
	return opts, nil
}

// observers returns the Events, the metrics, Engine.Observer and Observers, in that order.
func (c *Controller) observers() (engine.Observers, error) {
	var obs engine.Observers
	if c.opts.Mode != clientgo.ModeDryRun {
		c.events = clientgo.NewEventWriter(cmp.Or(c.opts.EventClient, c.client), clientgo.EventWriterOptions{Component: Component, Clock: c.clock})
		obs = append(obs, clientgo.NewEventObserver(c.events, clientgo.EventObserverOptions{Events: Events}))
	}
	if c.opts.Metrics != nil {
		m, err := c.opts.Metrics.Instrument(clientgo.Instrumented{Controller: "device", Kube: KubeMetrics, Clock: c.clock,
			Stats: func() engine.Stats { return c.eng.Stats() }, ActWorkers: func() int { return c.eng.ActWorkers() }})
		if err != nil {
			return nil, fmt.Errorf("device: %w", err)
		}
		obs = append(obs, m)
	}
	if c.opts.Engine.Observer != nil {
		obs = append(obs, c.opts.Engine.Observer)
	}
	return append(obs, c.opts.Observers...), nil
}

// actuator returns the Mode's deleter (nil in ModeDryRun), telling obs how each pod went.
func (c *Controller) actuator(obs engine.Observers) (engine.Actuator, error) {
	var dobs clientgo.DeleteObservers
	for _, o := range obs {
		if d, ok := o.(clientgo.DeleteObserver); ok {
			dobs = append(dobs, d)
		}
	}
	d, err := c.opts.Mode.NewDeleter(c.client, clientgo.EvictionDeleterOptions{PDBTimeout: c.opts.PDBTimeout, Pods: c.src,
		Observer: dobs, Clock: c.clock, Reason: DisruptionReason, Message: DisruptionMessage})
	if err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	if d == nil {
		return nil, nil
	}
	return eviction.PodActuator(c.status.counting(d)), nil
}

// changed is the news that scope's taints changed, before the engine hears of it.
func (c *Controller) changed(scope string) {
	if c.census != nil {
		c.census.changed(scope)
	}
	if name, ok := strings.CutPrefix(scope, ruleScope("")); ok {
		c.status.ruleChanged(name)
	}
}

// flipped is the news that scope's verdict changed.
func (c *Controller) flipped(scope string) {
	if name, ok := strings.CutPrefix(scope, ruleScope("")); ok {
		c.status.dueNow(name)
	}
	c.eng.Recounted(scope)
}

// Engine returns the controller's engine, for its Pending, Backlog and WaitIdle.
func (c *Controller) Engine() *engine.Engine[*v1.Pod] { return c.eng }

// Informers returns the controller's informers.
func (c *Controller) Informers() Informers { return c.inf }

// Synced is closed once the informers' caches have synced and their handlers have handed
// the initial listing to the engine (alongside a [clientgo.Controller], once Lead runs).
func (c *Controller) Synced() <-chan struct{} { return c.synced }

// Lead runs what the leader does until ctx is done: the Events and Reachability's Run at
// once; once the informers have synced (and, with PodGroupsAuto, discovery has answered),
// the census of Engine.Confirm, the rules' status and the engine. It returns once all of
// them have stopped: nil when ctx ended it, or the engine's error (an
// [engine.PanicError]). It needs the informers running: Run starts them, or the
// [clientgo.Controller] it runs alongside. A second call is an error.
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
			wg.Go(func() { _ = c.status.queue.Run(lctx) })
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

// discoverPodGroups tells the Source, with PodGroupsAuto, whether PodGroups are served, or
// reports false when ctx ended first.
func (c *Controller) discoverPodGroups(ctx context.Context) bool {
	if c.opts.PodGroups != PodGroupsAuto {
		return true
	}
	logger := klog.FromContext(ctx)
	for {
		served, err := servesPodGroups(ctx, c.client.Discovery())
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			logger.Info("Discovery refused: PodGroup reservations are not followed; set Options.PodGroups to say", "err", err)
			return true
		}
		if err == nil {
			c.src.FollowPodGroups(served)
			logger.V(1).Info("Discovered whether the API server serves PodGroups: PodGroup reservations are followed if so", "served", served)
			return true
		}
		logger.V(1).Info("Asking the API server whether it serves PodGroups failed; will retry", "err", err)
		select {
		case <-ctx.Done():
			return false
		case <-c.clock.After(time.Second):
		}
	}
}

// servesPodGroups asks discovery whether some version of scheduling.k8s.io serves podgroups.
func servesPodGroups(ctx context.Context, d discovery.DiscoveryInterface) (bool, error) {
	dc := discovery.ToDiscoveryInterfaceWithContext(d)
	groups, err := dc.ServerGroupsWithContext(ctx)
	if err != nil {
		return false, fmt.Errorf("device: discovering the API groups: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name != "scheduling.k8s.io" {
			continue
		}
		for _, v := range g.Versions {
			switch list, err := dc.ServerResourcesForGroupVersionWithContext(ctx, v.GroupVersion); {
			case apierrors.IsNotFound(err):
			case err != nil:
				return false, fmt.Errorf("device: discovering %s: %w", v.GroupVersion, err)
			case slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "podgroups" }):
				return true, nil
			}
		}
	}
	return false, nil
}

// waitSynced waits on channels (client-go's WaitForCacheSync polls every 100 ms) until the
// informers and the handlers have synced, or reports false when ctx ended first.
func (c *Controller) waitSynced(ctx context.Context) bool {
	if !cache.WaitFor(ctx, "", c.handlers...) {
		return false
	}
	c.syncOnce.Do(func() {
		c.eng.Synced()
		close(c.synced)
	})
	return true
}

// Run runs the controller alone until ctx is done: it starts the informers and leads (with
// leader election, once the caches have synced and only while it holds the Lease). Before
// it returns, it stops the leader's work, then releases the Lease, then stops the
// informers. It returns nil when ctx ends it, [clientgo.ErrLeaseLost] when the Lease was
// lost, or Lead's error. A Controller runs once.
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
	c.factory.StartWithContext(ctx)
	if c.opts.Elector == nil {
		return c.Lead(ctx)
	}
	if r := c.opts.Reachability; r != nil {
		wg.Go(func() { _ = r.Run(ctx, c.clock, clientgo.ReadyzProbe(c.client), nil) })
	}
	if !c.waitSynced(ctx) {
		return nil // ctx is done
	}
	defer c.elected.Store(true)
	return c.opts.Elector.Run(ctx, c.Lead)
}

// Ready returns nil once the caches have synced, while the API server answers (with
// [Options.Reachability]) and while the Elector is ready or about to run. It does not block.
func (c *Controller) Ready() error {
	var err error
	select {
	case <-c.synced:
	default:
		return errors.New("device: caches not synced")
	}
	if c.opts.Reachability != nil {
		err = c.opts.Reachability.Err()
	}
	if err == nil && c.opts.Elector != nil {
		err = c.opts.Elector.Ready()
		if errors.Is(err, clientgo.ErrNotElecting) && !c.elected.Load() {
			return nil // synced: Run calls the Elector's Run next
		}
	}
	return err
}

// Healthy returns nil unless the Elector says the controller should be restarted.
func (c *Controller) Healthy() error {
	if c.opts.Elector == nil {
		return nil
	}
	return c.opts.Elector.Healthy()
}

// Handler returns the controller's /healthz, /readyz and /metrics: [clientgo.ProbeHandler].
func (c *Controller) Handler(metrics http.Handler) http.Handler {
	return clientgo.ProbeHandler(c.Healthy, c.Ready, metrics)
}
