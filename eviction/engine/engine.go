package engine

import (
	"cmp"
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

// Engine acts on targets whose tolerations of their holders' NoExecute taints have run out,
// as the package doc describes. T is the caller's type of target, such as *v1.Pod.
//
// All methods are safe for concurrent use. The update methods, Synced, Recounted and
// RetryUnreachable return at once. The zero Engine is not usable: create one with [New].
type Engine[T any] struct {
	src   Source[T]
	act   Actuator
	clock clock.Clock
	loc   *time.Location // of the clock's times, for the times the Observer is told
	obs   Observer
	opts  Options
	rules rules

	// Each of these keeps its own lock; doc.go gives their order.
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

	started atomic.Bool
	halt    context.CancelCauseFunc // stops Run with a worker's panic
	failure atomic.Pointer[PanicError]
}

// New returns an Engine that reads src and acts through act, or an error when src or act
// is nil (act may be nil with [Options.DryRun]) or an option is out of range.
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
	workers := cmp.Or(opts.ActWorkers, opts.MaxActWorkers) // a pinned count, or the most
	e.queue, err = timedqueue.New(e.work, timedqueue.Options{Clock: opts.Clock, Workers: workers})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.conc = concurrency.New(opts.ActWorkers, MinActWorkers, opts.MaxActWorkers, e.queue.SetWorkers)
	return e, nil
}

// HolderUpdated takes a holder's new state (added or changed) and returns at once; a worker
// then decides again about its targets. With a [Brake] it also counts the holder's taint
// keys and group. Callers may leave out updates that change neither the NoExecute taints
// ([TaintsChanged]) nor the group.
func (e *Engine[T]) HolderUpdated(h Holder) {
	if e.gate != nil {
		e.wake(e.gate.HolderUpdated(h.Name, h.Group, h.Taints, false))
	}
	e.intake.PutHolder(h.Name, holderEvent{holder: h})
}

// HolderDeleted takes the deletion of the holder name and returns at once; a worker then
// cancels the evictions it caused.
func (e *Engine[T]) HolderDeleted(name string) {
	if e.gate != nil {
		e.wake(e.gate.HolderUpdated(name, "", nil, true))
	}
	e.intake.PutHolder(name, holderEvent{holder: Holder{Name: name}, deleted: true})
}

// TargetUpdated takes a target's new state (added or changed) and returns at once; a worker
// then decides about it from the Source's state (from t, if the Source fails). Callers may
// leave out updates that change nothing of its [Target], such as a pod's status.
func (e *Engine[T]) TargetUpdated(t T) {
	key, holder := e.src.Locate(t)
	e.intake.PutTarget(holder, key, targetEvent[T]{obj: t})
}

// TargetDeleted takes the deletion of target t, in its last known state, and returns at
// once; a worker then cancels its eviction.
func (e *Engine[T]) TargetDeleted(t T) {
	key, holder := e.src.Locate(t)
	e.intake.PutTarget(holder, key, targetEvent[T]{obj: t, deleted: true})
}

// Synced tells the Engine that it has been told of every holder and target its Source has.
// Until then an Engine with a [Brake] or [Confirm], which count them, lets no due eviction
// pass (Delayed, [ReasonNotSynced]). Without them, and after the first call, it does
// nothing. It returns at once.
func (e *Engine[T]) Synced() {
	if e.synced != nil {
		e.synced.Done()
		e.wake(e.gate.Wake(budget.SyncedScope))
	}
}

// Recounted tells the Engine that the counts or the confirmation of the [Census] scope name
// changed: the evictions it holds ask the budgets again, in the order they fell due.
// Without [Confirm] it does nothing. It returns at once; it must not be called from within
// [Census.Reach].
func (e *Engine[T]) Recounted(name string) {
	if e.gate != nil && e.opts.Confirm.Fraction > 0 {
		// Evictions held by several scopes wait under the scope they share ("").
		e.wake(e.gate.Wake(budget.ConfirmScope(name), budget.ConfirmScope("")))
	}
}

// wake has an act worker look again at the evictions the budgets released.
func (e *Engine[T]) wake(list []budget.Woken[*eviction]) {
	for _, w := range list {
		e.queue.Schedule(w.Ev, struct{}{}, time.Unix(0, w.Due))
	}
}

// ActWorkers returns how many Actuator calls may run at once now; see [Options.ActWorkers].
func (e *Engine[T]) ActWorkers() int { return e.conc.Current() }

// Backlog returns the number of holder and target updates queued and not yet processed.
func (e *Engine[T]) Backlog() int { return e.intake.Backlog() }

// Len returns the number of targets the Engine keeps an eviction of: those open, and those
// acted on whose removal (or move) the Source does not show yet.
func (e *Engine[T]) Len() int { return e.stats.kept() }

// Run processes updates and acts on targets until ctx is done, then waits for every
// goroutine it started (a running Actuator call sees its context cancelled) and returns
// ctx's error; or, when a Source or Observer method panics in a worker, stops the same way
// and returns a *[PanicError]. It logs to ctx's logger (logr.FromContext). Updates from
// before Run are processed when it starts. A second call returns [ErrRunTwice].
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

// recoverWorker, deferred by each unit of a worker's work, stops Run with the panic of a
// Source or Observer method; the unit's locks are released by their own defers.
func (e *Engine[T]) recoverWorker() {
	if v := recover(); v != nil {
		err := &PanicError{Value: v, Stack: debug.Stack(), In: "a worker"}
		e.failure.CompareAndSwap(nil, err)
		e.halt(err)
	}
}

// ErrStopped is returned by [Engine.WaitIdle] when Run has returned with work left: updates
// not processed, or evictions due.
var ErrStopped = errors.New("engine: Run has returned and work is left")

// WaitIdle blocks until the Engine is idle, or ctx is done, and returns nil or ctx's error.
// Idle: every update made before the call is processed, and no eviction due at the clock's
// time is queued, waiting for an act worker, or running (with the updates its call makes).
// Evictions due later are not waited for, nor those at a budget until it lets them go.
//
// It is meant for tests and simulations on a fake clock: feed updates, WaitIdle, step the
// clock, WaitIdle again. When it returns, the schedule's timer is armed for the next
// deadline, so a step right after fires exactly what is due by then.
//
// Before Run has started its schedule, it waits for Run; after Run has returned, it returns
// nil if nothing was left, and [ErrStopped] otherwise. An Actuator call that never returns
// keeps it waiting. It must not be called from this Engine's Observer or Actuator.
func (e *Engine[T]) WaitIdle(ctx context.Context) error {
	select {
	case <-e.queue.Started():
	case <-ctx.Done():
		return ctx.Err()
	}
	for {
		before, err := e.intake.WaitIdle(ctx)
		if err == nil {
			err = e.queue.WaitIdle(ctx)
		}
		var after uint64
		if err == nil {
			after, err = e.intake.WaitIdle(ctx)
		}
		switch {
		case errors.Is(err, intake.ErrStopped) || errors.Is(err, timedqueue.ErrStopped):
			return ErrStopped
		case err != nil:
			return err
		case after == before:
			return nil // no update came while the evictions ran: nothing new can be due
		}
	}
}
