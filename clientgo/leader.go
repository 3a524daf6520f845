package clientgo

import (
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
)

// Kube-controller-manager's leader election timings, the defaults of [LeaderElection].
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// DefaultLeaseName is the name of the Lease when [LeaderElection.Name] is empty.
	DefaultLeaseName = "taintevict-controller"
)

// LeaderElection configures leader election with a coordination.k8s.io Lease (client-go's
// leaderelection). Zero durations take kube-controller-manager's defaults; they must then
// satisfy LeaseDuration > RenewDeadline > 1.2 × RetryPeriod, as client-go requires.
type LeaderElection struct {
	// Namespace of the Lease; required.
	Namespace string
	// Name of the Lease; "" means DefaultLeaseName.
	Name string
	// Identity of this replica; "" means the host name and a random UUID.
	Identity string
	// LeaseDuration is how long a standby waits from the leader's last renewal before it
	// takes the Lease.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it gives up.
	RenewDeadline time.Duration
	// RetryPeriod is the time between tries.
	RetryPeriod time.Duration
	// KeepLeaseOnStop keeps the Lease when Run's context ends, as a crash would; by default
	// it is released once the Manager has stopped, so that a standby takes over at once.
	KeepLeaseOnStop bool
}

// elector runs a Manager while it holds the Lease.
type elector struct {
	le       *leaderelection.LeaderElector
	watchdog *leaderelection.HealthzAdaptor
	config   *leaderelection.LeaderElectionConfig

	electing atomic.Bool // the elector runs: waiting for the Lease, or holding it
	leading  atomic.Bool // the Manager runs
	lost     atomic.Bool

	mu      sync.Mutex
	closed  bool // no Manager may start any more
	running sync.WaitGroup

	failed  chan struct{} // closed when manage failed
	failure atomic.Pointer[error]
}

func newElector(client kubernetes.Interface, opts LeaderElection) (*elector, error) {
	if opts.Namespace == "" {
		return nil, errors.New("clientgo: LeaderElection.Namespace is required")
	}
	opts = leaderDefaults(opts)
	e := &elector{watchdog: leaderelection.NewLeaderHealthzAdaptor(20 * time.Second), failed: make(chan struct{})}
	e.config = &leaderelection.LeaderElectionConfig{
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

func leaderDefaults(opts LeaderElection) LeaderElection {
	if opts.Name == "" {
		opts.Name = DefaultLeaseName
	}
	if opts.Identity == "" {
		host, _ := os.Hostname()
		opts.Identity = host + "_" + string(uuid.NewUUID())
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = DefaultLeaseDuration
	}
	if opts.RenewDeadline == 0 {
		opts.RenewDeadline = DefaultRenewDeadline
	}
	if opts.RetryPeriod == 0 {
		opts.RetryPeriod = DefaultRetryPeriod
	}
	return opts
}

// run campaigns for the Lease until ctx is done, the Lease is lost or manage fails (returns
// an error before its context ended), and runs manage while it holds it. manage's context
// ends at once when the Lease is lost; the Lease is released (unless KeepLeaseOnStop) only
// after manage has returned, so that a standby takes over from a replica whose manage
// failed.
func (e *elector) run(ctx context.Context, manage func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	e.config.Callbacks = leaderelection.LeaderCallbacks{
		OnStartedLeading: func(lctx context.Context) { e.lead(ctx, lctx, manage) },
		OnStoppedLeading: func() {},
		OnNewLeader:      func(id string) { logger.V(1).Info("Leader", "identity", id) },
	}
	le, err := leaderelection.NewLeaderElector(*e.config)
	if err != nil {
		return fmt.Errorf("clientgo: leader election: %w", err)
	}
	e.watchdog.SetLeaderElection(le)
	e.le = le

	// The elector's context is not ctx: it must outlive the Manager, so that the Lease is
	// released only once the Manager has stopped.
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
		logger.Error(nil, "Lost the leader election Lease: stopped evicting")
	case <-e.failed:
	}
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.running.Wait() // the Manager has stopped
	stopElector()
	<-done
	e.electing.Store(false)
	if err := e.failure.Load(); err != nil {
		return *err
	}
	if e.lost.Load() {
		return ErrLeaseLost
	}
	return nil
}

// lead runs manage while this replica holds the Lease (lctx) and ctx is not done.
func (e *elector) lead(ctx, lctx context.Context, manage func(context.Context) error) {
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
	klog.FromContext(ctx).Info("Leading: the Manager runs")
	e.leading.Store(true)
	defer e.leading.Store(false)
	err := manage(klog.NewContext(mctx, klog.FromContext(ctx)))
	if err != nil && mctx.Err() == nil && e.failure.CompareAndSwap(nil, &err) {
		klog.FromContext(ctx).Error(err, "Stopped leading: the work under the Lease failed")
		close(e.failed)
	}
}

func (e *elector) ready() error {
	if err := e.failure.Load(); err != nil {
		return *err
	}
	switch {
	case e.lost.Load():
		return ErrLeaseLost
	case !e.electing.Load():
		return errors.New("clientgo: leader election not running")
	}
	return nil
}

func (e *elector) healthy() error {
	if err := e.failure.Load(); err != nil {
		return *err
	}
	if e.lost.Load() {
		return ErrLeaseLost
	}
	return e.watchdog.Check(nil)
}
