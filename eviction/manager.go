package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/timedqueue"
	"github.com/taintevict/taintevict/tolerations"
)

// ErrRunTwice is returned by [Manager.Run] when the Manager has already been run.
var ErrRunTwice = errors.New("eviction: Run called more than once")

// Manager evicts pods from nodes with NoExecute taints they do not tolerate, when their
// tolerations run out. The caller feeds it node and pod updates ([Manager.NodeUpdated],
// [Manager.PodUpdated], usually from informer event handlers), gives it a [Cache] to read
// and a [Deleter] to call, and runs it with [Manager.Run].
//
// Updates are queued and processed by Options.Workers goroutines: nodes are hashed onto them
// by name, so one node's updates are processed in order and before updates of its pods.
// Pod updates are level-triggered: processing reads the pod's current state from the Cache,
// so updates that arrive out of order or coalesce lose nothing. The schedule is a timed
// queue keyed by namespace/name; right before it deletes, the Manager rechecks the pod and
// node in the Cache.
//
// All methods are safe for concurrent use. NodeUpdated and PodUpdated never block on
// processing. The zero Manager is not usable: create one with [New].
type Manager struct {
	cache   Cache
	deleter Deleter
	clock   clock.Clock
	loc     *time.Location // of the clock's times, for the deadlines the Observer is told
	obs     Observer
	opts    Options
	tolOpts tolerations.Options
	shards  []*shard

	// Each of these keeps its own lock; podLocks order the decisions about one pod.
	queue    *timedqueue.Queue[types.NamespacedName, pending] // the schedule
	retries  *lookupRetries                                   // updates whose lookups failed
	taints   nodeTaints                                       // NoExecute taints of known nodes
	attempts attemptBook                                      // evictions running or failing
	deleted  deletedPods                                      // deleted, removal not seen yet
	podLocks *podLocks
	gate     *gate // rate limits and brake; nil when Options set none

	deleteTimers timeoutTimers // the timers of Options.DeleteTimeout, reused

	started atomic.Bool // Run has been called
}

// New returns a Manager that reads cache and evicts through deleter. It returns an error,
// and no Manager, when cache or deleter is nil or an option is out of range.
func New(deleter Deleter, cache Cache, opts Options) (*Manager, error) {
	if deleter == nil && !opts.DryRun {
		return nil, errors.New("eviction: nil Deleter (set Options.DryRun to run without one)")
	}
	if cache == nil {
		return nil, errors.New("eviction: nil Cache")
	}
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	m := &Manager{
		cache:    cache,
		deleter:  deleter,
		clock:    opts.Clock,
		loc:      opts.Clock.Now().Location(),
		obs:      opts.Observer,
		opts:     opts,
		tolOpts:  tolerations.Options{ComparisonOperators: opts.ComparisonOperators},
		shards:   make([]*shard, opts.Workers),
		podLocks: newPodLocks(),
	}
	for i := range m.shards {
		m.shards[i] = newShard()
	}
	m.queue, err = timedqueue.New(m.evict, timedqueue.Options{
		Clock:   opts.Clock,
		Workers: opts.DeleteWorkers,
		Backoff: opts.Backoff.queue(),
	})
	if err != nil {
		return nil, fmt.Errorf("eviction: %w", err)
	}
	m.gate = newGate(opts, m.queue)
	if m.retries, err = newLookupRetries(opts.Clock, opts.Backoff); err != nil {
		return nil, fmt.Errorf("eviction: %w", err)
	}
	return m, nil
}

// Pending is one scheduled eviction, as [Manager.Pending] reports it.
type Pending struct {
	Pod PodRef
	// At is when the pod is due; at or before now for an eviction that is due, waits to
	// retry, or waits for a rate limit or the brake (then it is when the Manager found it
	// due). An eviction whose Deleter call is running is not pending, and not listed.
	At time.Time
	// Delayed is why an eviction that is due waits: [ReasonRateLimited] or
	// [ReasonPaused]; empty when it does not.
	Delayed Reason
}

// Pending returns the scheduled evictions, earliest first: what will be evicted, and when,
// in the location of the clock's time (UTC for a clock in UTC). It copies the whole
// schedule, O(n); it is meant for previews and debugging.
func (m *Manager) Pending() []Pending {
	loc := m.clock.Now().Location()
	entries := m.queue.Pending()
	out := make([]Pending, len(entries))
	for i, e := range entries {
		out[i] = Pending{Pod: refOf(e.Key, e.Value), At: e.At.In(loc)}
	}
	if m.gate == nil {
		return out
	}
	for i := range out {
		if due, reason, ok := m.gate.held(entries[i].Key, entries[i].Value.uid); ok {
			out[i].At, out[i].Delayed = due, reason
		}
	}
	slices.SortStableFunc(out, func(a, b Pending) int { return a.At.Compare(b.At) })
	return out
}

// Backlog returns the number of node and pod updates queued and not yet processed.
func (m *Manager) Backlog() int {
	n := 0
	for _, s := range m.shards {
		n += s.backlog()
	}
	return n
}

// Run processes updates and evicts pods until ctx is done, then waits for every goroutine it
// started (a running Deleter call sees its context cancelled) and returns ctx's error. The
// logger, if any, comes from ctx (logr.FromContext, as klog.FromContext). Updates that
// arrive before Run are kept and processed when it starts. A Manager runs once: a second
// call returns [ErrRunTwice].
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return ErrRunTwice
	}

	logger := logr.FromContextOrDiscard(ctx).WithName("taint-eviction")
	ctx = logr.NewContext(ctx, logger)
	logger.V(2).Info("starting", "workers", m.opts.Workers, "deleteWorkers", m.opts.DeleteWorkers, "dryRun", m.opts.DryRun)

	var wg sync.WaitGroup
	for _, s := range m.shards {
		wg.Go(func() { m.runShard(ctx, s); s.stop() })
	}
	wg.Go(func() { _ = m.queue.Run(ctx) })
	wg.Go(func() { m.retries.run(ctx) })
	<-ctx.Done()
	wg.Wait()
	logger.V(2).Info("stopped")
	return ctx.Err()
}

func (m *Manager) shardFor(node string) *shard {
	return m.shards[shardOf(node, len(m.shards))]
}

// runShard is one event worker: it processes its shard's updates, nodes first, until ctx is
// done.
func (m *Manager) runShard(ctx context.Context, s *shard) {
	for {
		w, ok := s.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
				continue
			}
		}
		if ctx.Err() != nil {
			return
		}
		if w.isNode {
			m.handleNode(ctx, w.node, w.nodeEv)
		} else {
			m.syncPod(w.pod, w.podObj, m.clock.Now(), ReasonNotTainted)
		}
	}
}
