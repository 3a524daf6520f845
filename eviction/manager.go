package eviction

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
)

// ErrRunTwice is returned by [Manager.Run] when the Manager has already been run.
var ErrRunTwice = errors.New("eviction: Run called more than once")

// ErrStopped is returned by [Manager.WaitIdle] when Run has returned and work is left that
// no goroutine will do: updates not processed, or evictions that are due.
var ErrStopped = errors.New("eviction: Run has returned and work is left")

// PanicError is the error a failed attempt reports (to [engine.Observer.Failed]) when the
// [Deleter] panicked, and what [Manager.Run] returns when the Cache or the Observer
// panicked in one of its workers; see [engine.PanicError].
type PanicError = engine.PanicError

// Manager evicts pods from nodes with NoExecute taints they do not tolerate, when their
// tolerations run out. The caller feeds it node and pod updates, usually from informer event
// handlers, gives it a [Cache] to read and a [Deleter] to call, and runs it with
// [Manager.Run].
//
// It is the [engine.Engine] for pods bound to their nodes: each pod is a target with one
// binding, to the node in spec.nodeName, with spec.tolerations; each node is a holder, its
// zone label its group. Options.Workers goroutines process the updates, each node's on one
// of them (hashed by name), in order and before its pods'. Processing reads a pod's current
// state from the Cache, so updates that arrive out of order or coalesce lose nothing.
//
// All methods are safe for concurrent use. NodeUpdated and PodUpdated never block on
// processing. The zero Manager is not usable: create one with [New].
type Manager struct {
	e      *engine.Engine[*v1.Pod]
	census *nodeCensus // Options.Confirm's, when the caller gives none
}

// New returns a Manager that reads cache and evicts through deleter. It returns an error,
// and no Manager, when cache or deleter is nil (deleter may be nil with Options.DryRun) or
// an option is out of range.
func New(deleter Deleter, cache Cache, opts Options) (*Manager, error) {
	if deleter == nil && !opts.DryRun {
		return nil, errors.New("eviction: nil Deleter (set Options.DryRun to run without one)")
	}
	if cache == nil {
		return nil, errors.New("eviction: nil Cache")
	}
	var act engine.Actuator
	if deleter != nil {
		act = PodActuator(deleter)
	}
	var census *nodeCensus
	if opts.Confirm.Fraction > 0 && opts.Confirm.Census == nil {
		census = newNodeCensus(opts.Confirm, opts.Tolerations)
		opts.Confirm.Census = census
	}
	e, err := engine.New(act, engine.Source[*v1.Pod](podSource{cache}), opts)
	if err != nil {
		return nil, fmt.Errorf("eviction: %w", err)
	}
	if census != nil {
		census.recount = e.Recounted
	}
	return &Manager{e: e, census: census}, nil
}

// Run processes updates and evicts pods until ctx is done, then waits for every goroutine it
// started (a running Deleter call sees its context cancelled) and returns ctx's error; see
// [engine.Engine.Run]. Updates that arrive before Run are processed when it starts. A
// Manager runs once: a second call returns [ErrRunTwice]. When the Cache or the Observer
// panics in one of its workers, Run stops in the same way and returns a *[PanicError] (a new
// Manager, started afresh from the cache, keeps the deadlines of taints with TimeAdded).
func (m *Manager) Run(ctx context.Context) error {
	err := m.e.Run(ctx)
	if errors.Is(err, engine.ErrRunTwice) {
		return ErrRunTwice
	}
	return err
}

// WaitIdle blocks until every NodeUpdated and PodUpdated made before the call has been
// processed and no eviction due at the clock's current time is queued, waiting for a
// delete worker, or running (its Deleter call and the updates that call makes included),
// or until ctx is done; it then returns nil, or ctx's error. Evictions due later, or that
// wait for a budget, are not waited for. It is meant for tests and simulations on a fake
// clock; see [engine.Engine.WaitIdle]. After Run has returned, it returns nil when nothing
// was left and [ErrStopped] otherwise. It must not be called from an Observer or a Deleter
// of this Manager, whose work it would wait for.
func (m *Manager) WaitIdle(ctx context.Context) error {
	err := m.e.WaitIdle(ctx)
	if errors.Is(err, engine.ErrStopped) {
		return ErrStopped
	}
	return err
}

// Synced tells the Manager that the caller's informers have synced and their handlers have
// delivered what they listed. Until then, a Manager with a Brake or Confirm evicts nothing
// (a due eviction waits, Delayed with [engine.ReasonNotSynced]), so that one started in the
// middle of an outage counts every node first; see [engine.Engine.Synced].
func (m *Manager) Synced() { m.e.Synced() }

// Stats returns the Manager's counts of evictions by where they stand, from counters, O(1):
// what metrics read. See [engine.Engine.Stats].
func (m *Manager) Stats() Stats { return m.e.Stats() }

// Pending returns the open evictions that wait, earliest first (ties by namespace and
// name), in the location of the clock's time. It looks at every one, O(n), for previews
// and debugging; metrics read [Manager.Stats].
func (m *Manager) Pending() []Pending { return m.e.Pending() }

// PendingOf returns the pod's open eviction when it waits, as Pending lists it. O(1).
func (m *Manager) PendingOf(key types.NamespacedName) (Pending, bool) { return m.e.PendingOf(key) }

// DeleteWorkers returns how many Deleter calls may run at once now: Options.ActWorkers
// when set, and otherwise where the limit that follows the Deleter's throughput stands.
func (m *Manager) DeleteWorkers() int { return m.e.ActWorkers() }

// RetryUnreachable retries at once, and returns how many, the evictions whose last Deleter
// call failed with an error for which Options.Unreachable returned true, keeping their
// backoff for the next failure: call it when the API server answers again. See
// [engine.Engine.RetryUnreachable].
func (m *Manager) RetryUnreachable() int { return m.e.RetryUnreachable() }

// Backlog returns the number of node and pod updates queued and not yet processed.
func (m *Manager) Backlog() int { return m.e.Backlog() }
