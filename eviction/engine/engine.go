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
// All methods are safe for concurrent use. The update methods, Synced, Recounted and
// RetryUnreachable return at once: they take no lock that a decision in progress holds.
// The zero Engine is not usable: create one with [New].
type Engine[T any] struct {
	src   Source[T]
	act   Actuator
	clock clock.Clock
	loc   *time.Location // of the clock's times, for the times the Observer is told
	obs   Observer
	opts  Options
	rules rules

	// Each of these keeps its own lock; their order is in doc.go ("Locks", below the package clause).
	intake  *intake.Intake[holderEvent, targetEvent[T]]
	store   *store                                 // every target's eviction, one per key
	queue   *timedqueue.Queue[*eviction, struct{}] // when each eviction next wants a worker
	holders holderTable
	gate    *budget.Gate[*eviction] // nil: no budget
	synced  *budget.Synced          // nil: no budget that needs Synced
	conc    *concurrency.Limit
	timeout error // the cause of a call cancelled by Options.ActTimeout
	unreach unreachableIndex
	stats   counters

	started atomic.Bool // Run has been called
	// halt stops Run, with the first panic of a worker (see recoverWorker); set by Run
	// before it starts them.
	halt    context.CancelCauseFunc
	failure atomic.Pointer[PanicError]
	ctx     atomic.Pointer[context.Context] // Run's, for the logger of work not given one
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
	e.gate, e.synced = opts.gate(e.stats.kept)
	e.store = newStore()
	e.timeout = fmt.Errorf("%w after %s", ErrActTimeout, opts.ActTimeout)
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

// Synced tells the Engine that it has been told of every holder and every target its
// Source has: the caller's informers have synced, and their handlers have delivered what
// they listed. Until then, an Engine with a Brake or Confirm lets no due eviction pass
// its budgets (it waits, reported Delayed with [ReasonNotSynced]), since those budgets
// count holders and targets, and would let go, from a part of them, what all of them hold:
// an Engine started in the middle of an outage, whose deadlines are long past, would act
// on the first targets it hears of. An Engine without those budgets ignores it. It
// returns at once, and is safe for concurrent use; calls after the first do nothing.
func (e *Engine[T]) Synced() {
	if e.synced != nil {
		e.synced.Done()
		e.wake(e.gate.Wake(budget.SyncedScope))
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
func (e *Engine[T]) wake(list []budget.Woken[*eviction]) {
	for _, w := range list {
		e.queue.Schedule(w.Ev, struct{}{}, time.Unix(0, w.Due))
	}
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
