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

// PanicError is what a failed attempt reports when the [Deleter] panicked, and what
// [Manager.Run] returns when the Cache or the Observer panicked; see [engine.PanicError].
type PanicError = engine.PanicError

// Manager evicts pods from nodes with NoExecute taints they do not tolerate, when their
// tolerations run out. The caller feeds it node and pod updates, usually from informer event
// handlers, gives it a [Cache] to read and a [Deleter] to call, and runs it with
// [Manager.Run].
//
// It is the [engine.Engine] for pods bound to their nodes: each pod is a target with one
// binding, to the node in spec.nodeName, with spec.tolerations; each node is a holder, its
// zone label its group. A node's updates are processed in order and before its pods'.
// Processing reads a pod's current state from the Cache, so updates that arrive out of
// order or coalesce lose nothing.
//
// All methods are safe for concurrent use. NodeUpdated and PodUpdated never block on
// processing. The zero Manager is not usable: create one with [New].
type Manager struct {
	e      *engine.Engine[*v1.Pod]
	census *nodeCensus // nil unless Options.Confirm needs one and the caller gives none
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
// started and returns ctx's error, or a *[PanicError]; see [engine.Engine.Run]. Updates
// that arrive before Run are processed when it starts. A second call returns [ErrRunTwice].
func (m *Manager) Run(ctx context.Context) error {
	err := m.e.Run(ctx)
	if errors.Is(err, engine.ErrRunTwice) {
		return ErrRunTwice
	}
	return err
}

// WaitIdle blocks until every update made before the call has been processed and no
// eviction due at the clock's current time is queued or running, or until ctx is done, for
// tests and simulations on a fake clock; see [engine.Engine.WaitIdle], which says what it
// returns. After Run has returned, it returns [ErrStopped] when work was left. It must not
// be called from an Observer or a Deleter of this Manager.
func (m *Manager) WaitIdle(ctx context.Context) error {
	err := m.e.WaitIdle(ctx)
	if errors.Is(err, engine.ErrStopped) {
		return ErrStopped
	}
	return err
}

// Synced tells the Manager that the caller's informers have synced and their handlers have
// delivered what they listed. Until then, a Manager with a Brake or Confirm evicts nothing;
// see [engine.Engine.Synced].
func (m *Manager) Synced() { m.e.Synced() }

// Stats returns the Manager's counts of evictions by where they stand, O(1); see
// [engine.Engine.Stats].
func (m *Manager) Stats() Stats { return m.e.Stats() }

// Pending returns the open evictions that wait, earliest first, O(n); see
// [engine.Engine.Pending].
func (m *Manager) Pending() []Pending { return m.e.Pending() }

// PendingOf returns the pod's open eviction when it waits, as Pending lists it. O(1).
func (m *Manager) PendingOf(key types.NamespacedName) (Pending, bool) { return m.e.PendingOf(key) }

// DeleteWorkers returns how many Deleter calls may run at once now: Options.ActWorkers
// when set, and otherwise where the limit that follows the Deleter's throughput stands.
func (m *Manager) DeleteWorkers() int { return m.e.ActWorkers() }

// RetryUnreachable retries at once, and returns how many, the evictions whose last Deleter
// call failed with an error for which Options.Unreachable returned true; see
// [engine.Engine.RetryUnreachable].
func (m *Manager) RetryUnreachable() int { return m.e.RetryUnreachable() }

// Backlog returns the number of node and pod updates queued and not yet processed.
func (m *Manager) Backlog() int { return m.e.Backlog() }
