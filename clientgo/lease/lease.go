package lease

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/taintevict/taintevict/clientgo"
)

// Kube-controller-manager's leader election timings, the defaults of [Options].
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// DefaultName is the name of the Lease when [Options.Name] is empty.
	DefaultName = "taintevict-controller"
)

// Options configures an [Elector]: the Lease, and client-go's leader election timings.
// Zero durations take kube-controller-manager's defaults; they must satisfy
// LeaseDuration > RenewDeadline > 1.2 × RetryPeriod, as client-go requires.
type Options struct {
	Namespace string // of the Lease; required
	Name      string // of the Lease; "" means DefaultName
	Identity  string // of this replica; "" means the host name and a random UUID
	// LeaseDuration is how long a standby waits from the last renewal to take the Lease.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it gives up.
	RenewDeadline time.Duration
	RetryPeriod   time.Duration // the time between tries
	// KeepLeaseOnStop keeps the Lease when Run's context ends, as a crash would; by default
	// it is released once the work under it has stopped, for a standby to take over.
	KeepLeaseOnStop bool
}

// Elector is the [clientgo.Elector] of a coordination.k8s.io Lease. Its methods are safe
// for concurrent use. The zero Elector is not usable: create one with [New].
type Elector struct {
	watchdog *leaderelection.HealthzAdaptor
	config   leaderelection.LeaderElectionConfig

	started  atomic.Bool // Run was called
	electing atomic.Bool // Run runs: waiting for the Lease, or holding it
	leading  atomic.Bool // lead runs
	lost     atomic.Bool

	mu      sync.Mutex
	closed  bool // no lead may start any more
	running sync.WaitGroup

	failed  chan struct{} // closed when lead failed
	failure atomic.Pointer[error]
}

var _ clientgo.Elector = (*Elector)(nil)

// New returns the Elector of the Lease opts describes. It fails without opts.Namespace.
func New(client kubernetes.Interface, opts Options) (*Elector, error) {
	if opts.Namespace == "" {
		return nil, errors.New("lease: Options.Namespace is required")
	}
	opts = defaults(opts)
	e := &Elector{watchdog: leaderelection.NewLeaderHealthzAdaptor(20 * time.Second), failed: make(chan struct{})}
	e.config = leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: opts.Namespace, Name: opts.Name},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: opts.Identity},
		},
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		ReleaseOnCancel: !opts.KeepLeaseOnStop,
		WatchDog:        e.watchdog,
		Name:            opts.Name,
	}
	return e, nil
}

func defaults(opts Options) Options {
	if opts.Identity == "" {
		host, _ := os.Hostname()
		opts.Identity = host + "_" + string(uuid.NewUUID())
	}
	opts.Name = cmp.Or(opts.Name, DefaultName)
	opts.LeaseDuration = cmp.Or(opts.LeaseDuration, DefaultLeaseDuration)
	opts.RenewDeadline = cmp.Or(opts.RenewDeadline, DefaultRenewDeadline)
	opts.RetryPeriod = cmp.Or(opts.RetryPeriod, DefaultRetryPeriod)
	return opts
}

// Run is [clientgo.Elector.Run] on the Lease, which is released (unless
// Options.KeepLeaseOnStop) only after lead has returned. A lead that failed is also
// reported by Ready and Healthy. A second call returns an error.
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	if !e.started.CompareAndSwap(false, true) {
		return errors.New("lease: Elector.Run called more than once")
	}
	logger := klog.FromContext(ctx)
	config := e.config
	config.Callbacks = leaderelection.LeaderCallbacks{
		OnStartedLeading: func(lctx context.Context) { e.lead(ctx, lctx, lead) },
		OnStoppedLeading: func() {},
		OnNewLeader:      func(id string) { logger.V(1).Info("Leader", "identity", id) },
	}
	le, err := leaderelection.NewLeaderElector(config)
	if err != nil {
		return fmt.Errorf("lease: leader election: %w", err)
	}
	e.watchdog.SetLeaderElection(le)

	// The elector's context outlives ctx, so that the Lease is released once lead stopped.
	ectx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	done := make(chan struct{})
	e.electing.Store(true)
	go func() {
		defer close(done)
		le.Run(ectx)
	}()
	select {
	case <-ctx.Done():
	case <-done: // le.Run returns early only when renewing failed: the Lease is lost
		e.lost.Store(true)
		logger.Error(nil, "Lost the leader election Lease: stopped leading")
	case <-e.failed:
	}
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.running.Wait() // lead has stopped
	stopElector()
	<-done
	e.electing.Store(false)
	return e.ended()
}

// ended returns lead's failure, or ErrLeaseLost once the Lease was lost, or nil.
func (e *Elector) ended() error {
	if err := e.failure.Load(); err != nil {
		return *err
	}
	if e.lost.Load() {
		return clientgo.ErrLeaseLost
	}
	return nil
}

// lead runs f while this replica holds the Lease (lctx) and ctx is not done.
func (e *Elector) lead(ctx, lctx context.Context, f func(context.Context) error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.running.Add(1)
	e.mu.Unlock()
	defer e.running.Done()

	mctx, cancel := context.WithCancel(lctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	logger := klog.FromContext(ctx)
	logger.Info("Leading")
	e.leading.Store(true)
	defer e.leading.Store(false)
	err := f(klog.NewContext(mctx, logger))
	if err != nil && mctx.Err() == nil && e.failure.CompareAndSwap(nil, &err) {
		logger.Error(err, "Stopped leading: the work under the Lease failed")
		close(e.failed)
	}
}

// Ready returns nil while Run campaigns or leads: an error before, after, once the Lease
// is lost ([clientgo.ErrLeaseLost]), and once lead failed. It does not block.
func (e *Elector) Ready() error {
	if err := e.ended(); err != nil || e.electing.Load() {
		return err
	}
	return fmt.Errorf("lease: %w", clientgo.ErrNotElecting)
}

// Healthy returns nil unless the Lease was lost, lead failed, or this replica leads and has
// not renewed its Lease for longer than the Lease's duration plus 20 s. It does not block.
func (e *Elector) Healthy() error {
	if err := e.ended(); err != nil {
		return err
	}
	return e.watchdog.Check(nil)
}

// Leading reports whether lead runs.
func (e *Elector) Leading() bool { return e.leading.Load() }
