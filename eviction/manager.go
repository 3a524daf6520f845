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
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/timedqueue"
	"github.com/taintevict/taintevict/tolerations"
)

// ErrRunTwice is returned by [Manager.Run] when the Manager has already been run.
var ErrRunTwice = errors.New("eviction: Run called more than once")

// pending is what the eviction queue keeps per pod besides its deadline.
type pending struct {
	uid   types.UID
	node  string
	since int64 // unix nanoseconds the countdown started, for FromObservation
}

// Manager evicts pods from nodes with NoExecute taints they do not tolerate, when their
// tolerations run out. The caller feeds it node and pod updates ([Manager.NodeUpdated],
// [Manager.PodUpdated], usually from informer event handlers), gives it a [Cache] to read
// and a [Deleter] to call, and runs it with [Manager.Run].
//
// Updates are queued and processed by Options.Workers goroutines: nodes are hashed onto them
// by name, so one node's updates are processed in order and before updates of its pods.
// Pod updates are level-triggered: processing reads the pod's current state from the Cache,
// so updates that arrive out of order or coalesce lose nothing. The schedule is a
// [timedqueue.Queue] keyed by namespace/name; right before it deletes, the Manager rechecks
// the pod and node in the Cache.
//
// All methods are safe for concurrent use. NodeUpdated and PodUpdated never block on
// processing. The zero Manager is not usable: create one with [New].
type Manager struct {
	cache   Cache
	deleter Deleter
	clock   clock.Clock
	obs     Observer
	opts    Options
	tolOpts tolerations.Options
	queue   *timedqueue.Queue[types.NamespacedName, pending]
	shards  []*shard

	// resync processes again, after a delay, the nodes and pods whose Cache lookups failed.
	// Keys are "node/NAME" and "pod/NAMESPACE/NAME"; the value re-queues the update.
	resync     *timedqueue.Queue[string, func()]
	resyncMu   sync.Mutex
	resyncFail map[string]int // consecutive failures per resync key
	failing    atomic.Int32   // len(resyncFail), read without the lock on hot paths

	// podLocks serialise the decisions about one pod: each reads the pod's state from the
	// Cache and changes its schedule while holding the lock of the pod's stripe, so that two
	// workers (a node's and a pod's) deciding about the same pod never interleave, and the
	// last decision is made from the newest state. They are channels of capacity one rather
	// than mutexes so that a goroutine waiting for one counts as blocked to testing/synctest.
	podLocks [podLockStripes]chan struct{}

	nodesMu sync.RWMutex
	nodes   map[string][]v1.Taint // NoExecute taints of known nodes, TimeAdded always set

	attemptsMu sync.Mutex
	attempts   map[types.NamespacedName]attempts // of evictions running or failing
	deleted    deletedPods                       // pods deleted whose removal the Manager has not seen yet

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
		cache:      cache,
		deleter:    deleter,
		clock:      opts.Clock,
		obs:        opts.Observer,
		opts:       opts,
		tolOpts:    tolerations.Options{ComparisonOperators: opts.ComparisonOperators},
		nodes:      make(map[string][]v1.Taint),
		attempts:   make(map[types.NamespacedName]attempts),
		resyncFail: make(map[string]int),
		shards:     make([]*shard, opts.Workers),
	}
	for i := range m.shards {
		m.shards[i] = newShard()
	}
	for i := range m.podLocks {
		m.podLocks[i] = make(chan struct{}, 1)
	}
	m.queue, err = timedqueue.New(m.evict, timedqueue.Options[types.NamespacedName]{
		Clock:   opts.Clock,
		Workers: opts.DeleteWorkers,
		Backoff: opts.Backoff,
	})
	if err != nil {
		return nil, fmt.Errorf("eviction: %w", err)
	}
	m.resync, err = timedqueue.New(func(_ context.Context, _ string, requeue func()) error {
		requeue()
		return nil
	}, timedqueue.Options[string]{Clock: opts.Clock, Workers: 1})
	if err != nil {
		return nil, fmt.Errorf("eviction: %w", err)
	}
	return m, nil
}

// NodeUpdated takes a node event: old nil for an added node, new nil for a deleted one. It
// queues the node when it was added or deleted, or when its NoExecute taints changed, and
// returns at once. Nil for both does nothing.
func (m *Manager) NodeUpdated(old, new *v1.Node) {
	switch {
	case new == nil && old == nil:
		return
	case new == nil:
		m.shardFor(old.Name).putNode(old.Name, nodeEvent{})
	case old == nil || !slices.EqualFunc(tolerations.NoExecuteTaints(old.Spec.Taints), tolerations.NoExecuteTaints(new.Spec.Taints), taintEqual):
		m.shardFor(new.Name).putNode(new.Name, nodeEvent{node: new})
	}
}

func taintEqual(a, b v1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect &&
		(a.TimeAdded == nil) == (b.TimeAdded == nil) && (a.TimeAdded == nil || a.TimeAdded.Equal(b.TimeAdded))
}

// PodUpdated takes a pod event: old nil for an added pod, new nil for a deleted one. It
// queues the pod when it was added bound to a node, deleted, bound, re-created under the
// same name, or when its tolerations changed or it started leaving (finished or being
// deleted), and returns at once. Other changes, such as status, are ignored, as in kube.
// Nil for both does nothing.
func (m *Manager) PodUpdated(old, new *v1.Pod) {
	switch {
	case new == nil && old == nil:
		return
	case new == nil:
		m.shardFor(old.Spec.NodeName).putPod(podKey(old), nil)
	case old == nil:
		if new.Spec.NodeName != "" {
			m.shardFor(new.Spec.NodeName).putPod(podKey(new), new)
		}
	case podKey(old) != podKey(new):
		m.PodUpdated(old, nil)
		m.PodUpdated(nil, new)
	case old.Spec.NodeName != new.Spec.NodeName || old.UID != new.UID ||
		leaving(old) != leaving(new) ||
		!apiequality.Semantic.DeepEqual(old.Spec.Tolerations, new.Spec.Tolerations):
		m.shardFor(new.Spec.NodeName).putPod(podKey(new), new)
	}
}

// Pending is one scheduled eviction, as [Manager.Pending] reports it.
type Pending struct {
	Pod PodRef
	// At is when the pod is due; at or before now for an eviction that is due or waits to
	// retry. An eviction whose Deleter call is running is not pending, and not listed.
	At time.Time
}

// Pending returns the scheduled evictions, earliest first: what will be evicted, and when.
// It copies the whole schedule, O(n); it is meant for previews and debugging.
func (m *Manager) Pending() []Pending {
	entries := m.queue.Pending()
	out := make([]Pending, len(entries))
	for i, e := range entries {
		out[i] = Pending{Pod: refOf(e.Key, e.Value), At: e.At}
	}
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
		wg.Go(func() { m.runShard(ctx, s) })
	}
	wg.Go(func() { _ = m.queue.Run(ctx) })
	wg.Go(func() { _ = m.resync.Run(ctx) })
	<-ctx.Done()
	wg.Wait()
	logger.V(2).Info("stopped")
	return ctx.Err()
}

func (m *Manager) shardFor(node string) *shard {
	return m.shards[shardOf(node, len(m.shards))]
}

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

// handleNode stores a node's NoExecute taints and brings the schedule of its pods in line.
func (m *Manager) handleNode(ctx context.Context, name string, ev nodeEvent) {
	now := m.clock.Now()
	var hadTaints, hasTaints bool
	switch {
	case ev.resync:
		hadTaints = true // list again: pods are processed against the taints known now
	case ev.node == nil:
		m.nodesMu.Lock()
		_, hadTaints = m.nodes[name]
		delete(m.nodes, name)
		m.nodesMu.Unlock()
	default:
		taints := tolerations.NoExecuteTaints(ev.node.Spec.Taints)
		m.nodesMu.Lock()
		prev, ok := m.nodes[name]
		hadTaints = ok
		if len(taints) == 0 {
			delete(m.nodes, name)
		} else {
			m.nodes[name] = stampTaints(taints, prev, now)
			hasTaints = true
		}
		m.nodesMu.Unlock()
	}
	if !hadTaints && !hasTaints {
		return // nothing could be pending for its pods, and nothing becomes due
	}
	pods, err := m.cache.PodsOnNode(name)
	if err != nil {
		logr.FromContextOrDiscard(ctx).V(2).Info("listing pods of node failed; will retry", "node", name, "err", err)
		m.retryLater(nodeResyncKey(name), now, func() { m.shardFor(name).putNode(name, nodeEvent{resync: true}) })
		return
	}
	m.succeeded(func() string { return nodeResyncKey(name) })
	untainted := ReasonNotTainted
	if ev.node == nil && !ev.resync {
		untainted = ReasonNodeDeleted
	}
	for _, pod := range pods {
		if pod == nil || pod.Spec.NodeName != name {
			continue
		}
		m.syncPod(podKey(pod), pod, now, untainted)
	}
}

// retryLater runs requeue after a delay that grows with each consecutive failure of key,
// by Options.Backoff, so that a failing Cache is not asked in a busy loop.
func (m *Manager) retryLater(key string, now time.Time, requeue func()) {
	m.resyncMu.Lock()
	m.resyncFail[key]++
	n := m.resyncFail[key]
	m.failing.Store(int32(len(m.resyncFail)))
	m.resyncMu.Unlock()
	m.resync.Schedule(key, requeue, now.Add(m.opts.Backoff.Delay(n)))
}

// succeeded forgets the failures of the key that key returns, if any; key is called only
// when some key is failing, so the common path builds no string.
func (m *Manager) succeeded(key func() string) {
	if m.failing.Load() == 0 {
		return
	}
	m.resyncMu.Lock()
	delete(m.resyncFail, key())
	m.failing.Store(int32(len(m.resyncFail)))
	m.resyncMu.Unlock()
}

func nodeResyncKey(name string) string { return "node/" + name }

func podResyncKey(key types.NamespacedName) string { return "pod/" + key.Namespace + "/" + key.Name }

// stampTaints returns taints where a missing TimeAdded is taken from the same taint in prev,
// or else set to now: the countdown of a taint without TimeAdded starts when the Manager
// first sees it. It copies taints only when it has to stamp one, so the result may share
// memory with taints and must not be modified (like the informer objects it comes from).
func stampTaints(taints, prev []v1.Taint, now time.Time) []v1.Taint {
	if !slices.ContainsFunc(taints, func(t v1.Taint) bool { return t.TimeAdded.IsZero() }) {
		return taints // the common case: nothing to stamp, nothing to copy
	}
	out := make([]v1.Taint, len(taints))
	copy(out, taints)
	for i := range out {
		if !out[i].TimeAdded.IsZero() {
			continue
		}
		stamp := now
		for j := range prev {
			if prev[j].Key == out[i].Key && prev[j].Value == out[i].Value && prev[j].Effect == out[i].Effect {
				stamp = prev[j].TimeAdded.Time
				break
			}
		}
		t := metav1.NewTime(stamp)
		out[i].TimeAdded = &t
	}
	return out
}

// podLockStripes is the number of pod locks; a power of two well above the worker count
// keeps unrelated pods from waiting on each other.
const podLockStripes = 256

// lockPod takes the lock of key's stripe and returns the function that releases it.
func (m *Manager) lockPod(key types.NamespacedName) (unlock func()) {
	h := fnv1a(fnv1a(fnv1a(fnvOffset, key.Namespace), "/"), key.Name)
	l := m.podLocks[h%podLockStripes]
	l <- struct{}{}
	return func() { <-l }
}

// syncPod brings the schedule of the pod named key in line with its state in the Cache now,
// under the pod's lock. When the Cache fails, it decides from fallback, the state an update
// or a listing carried, and decides again from the Cache after a delay. untainted is the
// reason given when a pending eviction is cancelled because the node is not tainted.
func (m *Manager) syncPod(key types.NamespacedName, fallback *v1.Pod, now time.Time, untainted Reason) {
	defer m.lockPod(key)()
	pod, err := m.cache.Pod(key.Namespace, key.Name)
	if err == nil || apierrors.IsNotFound(err) {
		m.succeeded(func() string { return podResyncKey(key) })
	}
	switch {
	case err == nil && pod == nil, err != nil && apierrors.IsNotFound(err): // IsNotFound(nil) allocates
		m.deleted.forget(key)
		m.cancel(key, ReasonPodDeleted)
		return
	case err != nil:
		node := ""
		if fallback != nil {
			node = fallback.Spec.NodeName
		}
		m.retryLater(podResyncKey(key), now, func() { m.shardFor(node).putPod(key, fallback) })
		if fallback == nil { // a delete event
			m.deleted.forget(key)
			m.cancel(key, ReasonPodDeleted)
			return
		}
		pod = fallback
	}
	m.processPod(pod, now, untainted)
}

// processPod schedules, moves or cancels the eviction of pod. The pod's lock must be held.
func (m *Manager) processPod(pod *v1.Pod, now time.Time, untainted Reason) {
	key := podKey(pod)
	ref := PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Node: pod.Spec.NodeName}
	if pod.Spec.NodeName == "" {
		m.cancel(key, ReasonPodUnbound)
		return
	}
	m.nodesMu.RLock()
	taints := m.nodes[pod.Spec.NodeName]
	m.nodesMu.RUnlock()
	if len(taints) == 0 {
		m.cancel(key, untainted)
		return
	}
	prev, prevAt, had := m.queue.Get(key)
	var since time.Time // only FromObservation counts from it
	if m.opts.DeadlineSource == FromObservation {
		since = now
		if had && prev.uid == pod.UID && prev.node == pod.Spec.NodeName {
			since = time.Unix(0, prev.since)
		}
	}
	e := m.deadline(taints, pod, since, now)
	if e.Verdict == tolerations.Stay {
		m.cancel(key, ReasonTolerated)
		return
	}
	if reason, ok := leavingReason(pod); ok {
		m.cancel(key, reason)
		m.obs.Skipped(ref, reason)
		return
	}
	if m.deleted.has(key, pod.UID) { // deleted already; the Cache has not caught up yet
		m.cancel(key, ReasonPodTerminating)
		m.obs.Skipped(ref, ReasonPodTerminating)
		return
	}
	p := pending{uid: pod.UID, node: pod.Spec.NodeName}
	if !since.IsZero() {
		p.since = since.UnixNano()
	}
	due := e.Verdict == tolerations.EvictNow
	switch {
	case had && prev == p && (prevAt.Equal(e.At) || due && !prevAt.After(now)),
		!had && due && m.evicting(key, pod.UID):
		// Unchanged, or due already, and waiting or running: a due eviction keeps its place
		// and its retry backoff.
	default:
		// Report before scheduling, so that an eviction due now is reported Scheduled before
		// a delete worker reports it Started.
		m.obs.Scheduled(ref, e.At)
		m.queue.Schedule(key, p, e.At)
	}
}

// deadline applies the configured deadline rule.
func (m *Manager) deadline(taints []v1.Taint, pod *v1.Pod, since, now time.Time) tolerations.Eviction {
	if m.opts.DeadlineSource == FromObservation {
		return tolerations.ObservedDeadline(taints, pod.Spec.Tolerations, since, now, m.tolOpts)
	}
	return tolerations.Deadline(taints, pod.Spec.Tolerations, now, now, m.tolOpts)
}

// cancel removes the pending eviction of key, if any, and reports it.
func (m *Manager) cancel(key types.NamespacedName, reason Reason) {
	p, _, pending := m.queue.Get(key)
	m.attemptsMu.Lock()
	_, tried := m.attempts[key] // an attempt runs now, or failed and waits to retry
	delete(m.attempts, key)
	m.attemptsMu.Unlock()
	if !pending && !tried {
		return
	}
	// Cancel also when nothing is pending: an attempt running now is then not retried.
	if m.queue.Cancel(key) && pending {
		m.obs.Cancelled(refOf(key, p), reason)
	}
}

func podKey(pod *v1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
}

func refOf(key types.NamespacedName, p pending) PodRef {
	return PodRef{Namespace: key.Namespace, Name: key.Name, UID: p.uid, Node: p.node}
}

// leaving reports whether the pod is finished or being deleted.
func leaving(pod *v1.Pod) bool {
	_, ok := leavingReason(pod)
	return ok
}

func leavingReason(pod *v1.Pod) (Reason, bool) {
	switch {
	case pod.DeletionTimestamp != nil:
		return ReasonPodTerminating, true
	case pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed:
		return ReasonPodFinished, true
	}
	return "", false
}
