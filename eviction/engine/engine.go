package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/eviction/engine/internal/budget"
	"github.com/taintevict/taintevict/eviction/engine/internal/concurrency"
	"github.com/taintevict/taintevict/eviction/engine/internal/intake"
	"github.com/taintevict/taintevict/eviction/engine/internal/store"
	"github.com/taintevict/taintevict/eviction/engine/internal/timeout"
	"github.com/taintevict/taintevict/timedqueue"
)

// ErrRunTwice is returned by [Engine.Run] when the Engine has already been run.
var ErrRunTwice = errors.New("engine: Run called more than once")

// Engine acts on targets bound to holders that carry NoExecute taints, when the targets'
// tolerations run out. The caller feeds it holder and target updates
// ([Engine.HolderUpdated], [Engine.TargetUpdated], usually from informer event handlers),
// gives it a [Source] to read and an [Actuator] to call, and runs it with [Engine.Run]. T is
// the caller's type of target object, such as *v1.Pod.
//
// Updates are queued and processed by Options.Workers goroutines: holders are hashed onto
// them by name, and targets by the holder [Source.Locate] gives, so that one holder's
// updates are processed in order and before updates of its targets. Target updates are
// level-triggered: processing reads the target's current state from the Source. Right
// before it acts, the Engine decides again from the Source's current state of the target
// and of its holders.
//
// All methods are safe for concurrent use. The update methods, Resume and RetryUnreachable
// return at once: they take no lock that a decision in progress holds. The zero Engine is
// not usable: create one with [New].
type Engine[T any] struct {
	src   Source[T]
	act   Actuator
	clock clock.Clock
	loc   *time.Location // of the clock's times, for the times the Observer is told
	obs   Observer
	opts  Options
	rules rules

	// Each of these keeps its own lock; their order is in doc.go ("Locks", below the package clause).
	intake   *intake.Intake[holderEvent, targetEvent[T]]
	store    *store.Store[eviction, scratch] // every target's eviction, one entry per key
	queue    *timedqueue.Queue[store.ID, struct{}]
	holders  holderTable
	gate     *budget.Gate // nil: no budget
	conc     *concurrency.Limit
	timeouts *timeout.Timeouts
	timeout  error // the cause of a call cancelled by Options.ActTimeout
	unreach  unreachableIndex
	stats    counters
	thinned  stripeSet // stripes waiting to be compacted (see storeMover)

	started atomic.Bool // Run has been called
	// halt stops Run, with the first panic of a worker (see recoverWorker); set by Run
	// before it starts them.
	halt    context.CancelCauseFunc
	failure atomic.Pointer[PanicError]
	ctx     atomic.Pointer[context.Context] // Run's, for the logger of work not given one
}

// scratch is a stripe's scratch space: what a decision under its lock fills and reuses.
type scratch struct {
	view   view
	causes []budget.Cause
	req    budget.Request
}

// New returns an Engine that reads src and acts through act. It returns an error, and no
// Engine, when src or act is nil (act may be nil with Options.DryRun) or an option is out
// of range.
func New[T any](act Actuator, src Source[T], opts Options) (*Engine[T], error) {
	if act == nil && !opts.DryRun {
		return nil, errors.New("engine: nil Actuator (set Options.DryRun to run without one)")
	}
	if src == nil {
		return nil, errors.New("engine: nil Source")
	}
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	e := &Engine[T]{
		src:   src,
		act:   act,
		clock: opts.Clock,
		loc:   opts.Clock.Now().Location(),
		obs:   opts.Observer,
		opts:  opts,
		rules: rules{source: opts.DeadlineSource, tol: opts.Tolerations},
	}
	e.gate = opts.gate(e.stats.kept)
	e.store = store.New(func(s *scratch) {
		// Room for two bindings, made at once: most targets have one or two, and a
		// decision then allocates nothing, not even the first time.
		s.view.target.Bindings = make([]Binding, 0, 2)
		s.view.holders = make([]holderView, 0, 2)
	}, store.Mover[eviction](storeMover[T]{e}))
	e.timeout = fmt.Errorf("%w after %s", ErrActTimeout, opts.ActTimeout)
	e.timeouts = timeout.New(opts.Clock, opts.ActTimeout, e.timeout)
	e.intake, err = intake.New[holderEvent, targetEvent[T]](opts.Workers, keepHolderEvent, opts.Clock, opts.Backoff.Delay, sourceErrorInterval)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	workers := opts.MaxActWorkers
	if opts.ActWorkers > 0 {
		workers = opts.ActWorkers
	}
	e.queue, err = timedqueue.New(e.work, timedqueue.Options{Clock: opts.Clock, Workers: workers})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.conc = concurrency.New(opts.ActWorkers, MinActWorkers, opts.MaxActWorkers, e.queue.SetWorkers)
	return e, nil
}

// HolderUpdated takes a holder's new state (added or changed) and returns at once: the
// Engine decides again about the holder's targets when a worker gets to it. With budgets
// that count holders (Options.Brake), it also counts the holder's taint keys and group,
// O(its taints), and wakes the evictions that a pause it ends held.
//
// Every update counts; callers may leave out those that change neither the NoExecute
// taints (see [TaintsChanged]) nor the group.
func (e *Engine[T]) HolderUpdated(h Holder) {
	if e.gate != nil {
		e.wake(e.gate.HolderUpdated(h.Name, h.Group, h.Taints, false))
	}
	e.intake.PutHolder(h.Name, holderEvent{holder: h})
}

// HolderDeleted takes the deletion of the holder name and returns at once: its targets'
// evictions that it caused are cancelled when a worker gets to it.
func (e *Engine[T]) HolderDeleted(name string) {
	if e.gate != nil {
		e.wake(e.gate.HolderUpdated(name, "", nil, true))
	}
	e.intake.PutHolder(name, holderEvent{holder: Holder{Name: name}, deleted: true})
}

// TargetUpdated takes a target's new state (added or changed) and returns at once; the
// Engine decides about it when a worker gets to it, from the Source's state then (or from t,
// if the Source fails). Callers may leave out updates that change nothing the Engine reads
// (see [Target]), such as a pod's status.
func (e *Engine[T]) TargetUpdated(t T) {
	key, holder := e.src.Locate(t)
	e.intake.PutTarget(holder, key, targetEvent[T]{obj: t})
}

// TargetDeleted takes the deletion of target t, in its last known state, and returns at
// once: its eviction, if any, is cancelled when a worker gets to it.
func (e *Engine[T]) TargetDeleted(t T) {
	key, holder := e.src.Locate(t)
	e.intake.PutTarget(holder, key, targetEvent[T]{obj: t, deleted: true})
}

// Resume releases the evictions that Options.Pauser holds under scope: an act worker asks
// the Pauser about each again, in the order they fell due. A scope that holds nothing, or
// an Engine without a Pauser, makes it do nothing. It returns at once, and is safe for
// concurrent use (also from the Pauser's own goroutines, but not from within Paused).
func (e *Engine[T]) Resume(scope string) {
	if e.gate != nil && e.opts.Pauser != nil {
		e.wake(e.gate.Wake(budget.PauserScope(scope)))
	}
}

// Recounted tells the Engine that the counts or the confirmation of the scope name of
// Options.Confirm's Census changed: an act worker asks the budgets again about each
// eviction it holds, in the order they fell due. A scope that holds nothing, or an Engine
// without Confirm, makes it do nothing. It returns at once, and is safe for concurrent use
// (but not from within Census.Reach).
func (e *Engine[T]) Recounted(name string) {
	if e.gate != nil && e.opts.Confirm.Fraction > 0 {
		// Evictions held by several scopes wait under the scope they share: a change of
		// any of them looks at those again.
		e.wake(e.gate.Wake(budget.ConfirmScope(name), budget.ConfirmScope("")))
	}
}

// wake has an act worker look again at the evictions the budgets released.
func (e *Engine[T]) wake(list []budget.Woken) {
	for _, w := range list {
		e.queue.Schedule(store.ID(w.ID), struct{}{}, time.Unix(0, w.Due))
	}
}

// RetryUnreachable sends every eviction whose last call failed with an error for which
// Options.Unreachable returned true, and that still waits for its retry, back to a worker
// now: the caller has seen that what the Actuator acts through (an API server, say)
// answers again, so these retries need not wait out a backoff that grew while it was away.
// It returns how many it sent back. The backoff is kept where it was: an eviction sent back
// that fails again, as unreachable or not, waits its next backoff, and only a failure of a
// later call can send it back again. So however often it is called (a backend that comes
// and goes, or one that answers every request but the Actuator's), each eviction gets at
// most one call more for each call its backoff allows. Evictions that failed for other
// reasons keep their backoff. A call under way during RetryUnreachable that then fails as
// unreachable is retried at once too, as if it had failed first. Without
// Options.Unreachable it does nothing.
//
// It returns at once, without waiting for the calls, and is safe for concurrent use.
func (e *Engine[T]) RetryUnreachable() int {
	if e.opts.Unreachable == nil {
		return 0
	}
	e.unreach.returns.Add(1)
	ids := e.unreach.take()
	now := e.clock.Now()
	for _, id := range ids {
		e.queue.Schedule(id, struct{}{}, now)
	}
	return len(ids)
}

// unreachableIndex finds the evictions that RetryUnreachable may send back: the IDs of
// those marked unreachable (see the lifecycle), so that it looks at no other. Its lock
// guards the set, and is taken under a stripe lock or alone, with no other.
type unreachableIndex struct {
	mu  sync.Mutex
	ids map[store.ID]struct{}
	// returns counts the calls of RetryUnreachable, so that a call that ran across one,
	// and an eviction that failed before one, know it.
	returns atomic.Uint64
}

func (u *unreachableIndex) add(id store.ID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ids == nil {
		u.ids = make(map[store.ID]struct{})
	}
	u.ids[id] = struct{}{}
}

func (u *unreachableIndex) forget(id store.ID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.ids, id)
}

// take returns the IDs and forgets them.
func (u *unreachableIndex) take() []store.ID {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]store.ID, 0, len(u.ids))
	for id := range u.ids {
		out = append(out, id)
	}
	u.ids = nil
	return out
}

// stripeSet is a set of the store's stripes, safe for concurrent use.
type stripeSet struct {
	mu  sync.Mutex
	set map[int32]bool
}

func (s *stripeSet) Store(stripe int32, in bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set = map[int32]bool{}
	}
	if in {
		s.set[stripe] = true
	} else {
		delete(s.set, stripe)
	}
}

// take returns the stripes in the set and empties it.
func (s *stripeSet) take() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int32, 0, len(s.set))
	for st := range s.set {
		out = append(out, st)
	}
	s.set = nil
	return out
}

// ActWorkers returns how many Actuator calls may run at once now: Options.ActWorkers when
// it is set, and otherwise where the limit that follows the actuator's throughput stands.
func (e *Engine[T]) ActWorkers() int { return e.conc.Current() }

// Backlog returns the number of holder and target updates queued and not yet processed.
func (e *Engine[T]) Backlog() int { return e.intake.Backlog() }

// Len returns the number of targets the Engine keeps an eviction of: those open, and those
// it has acted on whose removal (or move) has not reached the Source yet. An eviction goes
// once it is closed and, for one acted on, the action's effect is seen, so after an outage
// Len falls back to the evictions still open.
func (e *Engine[T]) Len() int { return e.Stats().kept() }

// Run processes updates and acts on targets until ctx is done, then waits for every
// goroutine it started (a running Actuator call sees its context cancelled) and returns
// ctx's error. When a method of the Source or the Observer panics in one of its workers,
// Run stops in the same way and returns that panic as a *[PanicError]. The logger, if any,
// comes from ctx (logr.FromContext, as klog.FromContext). Updates that arrive before Run
// are kept and processed when it starts. An Engine runs once: a second call returns
// [ErrRunTwice].
func (e *Engine[T]) Run(ctx context.Context) error {
	if !e.started.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	logger := logr.FromContextOrDiscard(ctx).WithName("taint-eviction")
	ctx = logr.NewContext(ctx, logger)
	logger.V(2).Info("starting", "workers", e.opts.Workers, "actWorkers", e.opts.ActWorkers, "maxActWorkers", e.opts.MaxActWorkers, "dryRun", e.opts.DryRun)

	parent := ctx
	ctx, e.halt = context.WithCancelCause(ctx)
	defer e.halt(nil)
	e.ctx.Store(&ctx)

	var wg sync.WaitGroup
	wg.Go(func() {
		e.intake.Run(ctx, intake.Handlers[holderEvent, targetEvent[T]]{Holder: e.onHolder, Target: e.onTarget})
	})
	wg.Go(func() { _ = e.queue.Run(ctx) })
	<-ctx.Done()
	wg.Wait()
	if err := e.failure.Load(); err != nil {
		logger.Error(err, "stopped", "stack", string(err.Stack))
		return err
	}
	logger.V(2).Info("stopped")
	return parent.Err()
}

// runCtx returns Run's context, for work that has none of its own.
func (e *Engine[T]) runCtx() context.Context {
	if p := e.ctx.Load(); p != nil {
		return *p
	}
	return context.Background()
}

// logger returns ctx's logger.
func (e *Engine[T]) logger(ctx context.Context) logr.Logger { return logr.FromContextOrDiscard(ctx) }

// recoverWorker, deferred by each unit of a worker's work, stops Run with the panic of a
// Source or Observer method, if one panicked. The locks the unit took are released by
// their own defers as the panic unwinds.
func (e *Engine[T]) recoverWorker() {
	if v := recover(); v != nil {
		err := &PanicError{Value: v, Stack: debug.Stack(), In: "a worker"}
		e.failure.CompareAndSwap(nil, err)
		e.halt(err)
	}
}
