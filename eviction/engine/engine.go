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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

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
// level-triggered: processing reads the target's current state from the Source. Each
// target's eviction is one record; right before it acts, the Engine decides again from the
// Source's current state of the target and of its holders.
//
// All methods are safe for concurrent use. The update methods never wait for updates to be
// processed; but with a Brake, an update that releases held evictions (as [Engine.Resume]
// does) takes their targets' locks, which a decision in progress holds for the time of a
// Source lookup and an Observer call. The zero Engine is not usable: create one with [New].
type Engine[T any] struct {
	src   Source[T]
	act   Actuator
	clock clock.Clock
	loc   *time.Location // of the clock's times, for the times the Observer is told
	obs   Observer
	opts  Options
	rules rules

	shards []*shard[T]
	// Each of these keeps its own lock; the stripe locks order the decisions about one
	// target.
	stripes *stripes
	records records        // every open eviction, one per target
	queue   *schedule      // when each open record wants a worker, and where it is
	retries *lookupRetries // updates whose lookups failed
	taints  holderTaints   // NoExecute taints of known holders
	conc    *concurrency   // how many actuator calls may run at once
	gate    *gate          // rate limits and brake; nil when Options set none
	unreach unreachable    // evictions whose last attempt found the backend unreachable

	actTimers timeoutTimers // the timers of Options.ActTimeout, reused
	timeout   error         // the cause of a call cancelled by Options.ActTimeout

	started atomic.Bool // Run has been called
	// halt stops Run, with the first panic of a worker (see recoverWorker); set by Run
	// before it starts them.
	halt    context.CancelCauseFunc
	failure atomic.Pointer[PanicError]
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
		src:     src,
		act:     act,
		clock:   opts.Clock,
		loc:     opts.Clock.Now().Location(),
		obs:     opts.Observer,
		opts:    opts,
		rules:   rules{source: opts.DeadlineSource, tol: opts.Tolerations},
		shards:  make([]*shard[T], opts.Workers),
		stripes: newStripes(),
		gate:    newGate(opts),
	}
	for i := range e.shards {
		e.shards[i] = newShard[T]()
	}
	e.timeout = fmt.Errorf("%w after %s", ErrActTimeout, opts.ActTimeout)
	e.actTimers.cause = e.timeout
	workers := opts.MaxActWorkers
	if opts.ActWorkers > 0 {
		workers = opts.ActWorkers
	}
	e.queue, err = timedqueue.New(e.work, timedqueue.Options{Clock: opts.Clock, Workers: workers})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.conc = newConcurrency(opts, e.queue.SetWorkers)
	if e.retries, err = newLookupRetries(opts.Clock, opts.Backoff); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return e, nil
}

// HolderUpdated takes a holder's new state (added or changed) and returns at once: the
// Engine decides again about the holder's targets when a worker gets to it. With
// Options.Brake set, it also counts the holder's taint keys and group (O(its taints)), and
// puts back in the schedule the evictions that a brake it releases held.
//
// Every update counts; callers may leave out those that change neither the NoExecute
// taints (see [TaintsChanged]) nor the group.
func (e *Engine[T]) HolderUpdated(h Holder) {
	if e.gate != nil {
		e.unpause(e.gate.holderUpdated(h.Name, h.Group, h.Taints))
	}
	e.shardFor(h.Name).putHolder(h.Name, holderEvent{holder: h})
}

// HolderDeleted takes the deletion of the holder name and returns at once: its targets'
// evictions that it caused are cancelled when a worker gets to it.
func (e *Engine[T]) HolderDeleted(name string) {
	if e.gate != nil {
		e.unpause(e.gate.holderDeleted(name))
	}
	e.shardFor(name).putHolder(name, holderEvent{holder: Holder{Name: name}, deleted: true})
}

// TargetUpdated takes a target's new state (added or changed) and returns at once; the
// Engine decides about it when a worker gets to it, from the Source's state then (or from t,
// if the Source fails). Callers may leave out updates that change nothing the Engine reads
// (see [Target]), such as a pod's status.
func (e *Engine[T]) TargetUpdated(t T) {
	key, holder := e.src.Locate(t)
	e.shardFor(holder).putTarget(key, targetEvent[T]{obj: t})
}

// TargetDeleted takes the deletion of target t, in its last known state, and returns at
// once: its eviction, if any, is cancelled when a worker gets to it.
func (e *Engine[T]) TargetDeleted(t T) {
	key, holder := e.src.Locate(t)
	e.shardFor(holder).putTarget(key, targetEvent[T]{obj: t, deleted: true})
}

// Pending is one open eviction that waits, as [Engine.Pending] reports it.
type Pending struct {
	Target Ref
	// At is when the target is due; at or before now for an eviction that is due, waits to
	// retry, or waits for a rate limit or the brake (then it is when the Engine found it
	// due). An eviction whose actuator call is running is not pending, and not listed.
	At time.Time
	// Delayed is why an eviction that is due waits: [ReasonRateLimited] or
	// [ReasonPaused]; empty when it does not.
	Delayed Reason
}

// Pending returns the open evictions that wait, earliest first (ties by key): what will be
// acted on, and when, in the location of the clock's time. It looks at every record, under
// its target's lock, O(n); it is meant for previews and debugging.
func (e *Engine[T]) Pending() []Pending {
	loc := e.clock.Now().Location()
	var out []Pending
	for _, p := range e.queue.Pending() {
		k := e.lock(p.Key)
		if r := k.current(); r.record != nil && r.id == p.Value && !r.is(running) && e.isOpen(k, r) {
			pe := Pending{Target: r.ref(p.Key), At: nanosTime(r.due, loc)}
			if x := k.extra(r, false); x != nil && x.hold != nil {
				due, reason := e.gate.waiting(x.hold)
				pe.At, pe.Delayed = nanosTime(due, loc), reason
			}
			out = append(out, pe)
		}
		k.unlock()
	}
	sortPending(out)
	return out
}

// Len returns the number of targets the Engine keeps a record of: those with an open
// eviction, and those it has acted on whose removal (or move) has not reached the Source
// yet. Every record goes once its eviction is closed and, for one acted on, the action's
// effect is seen, so after an outage Len falls back to the evictions still open.
func (e *Engine[T]) Len() int {
	return e.queue.Len() + int(e.records.ndone.Load())
}

// lock takes the stripe lock of key; see locked.
func (e *Engine[T]) lock(key types.NamespacedName) locked {
	return e.stripes.lock(key, &e.records, e.queue)
}

// ActWorkers returns how many Actuator calls may run at once now: Options.ActWorkers when
// it is set, and otherwise where the limit that follows the actuator's latency stands.
func (e *Engine[T]) ActWorkers() int { return e.conc.current() }

// Backlog returns the number of holder and target updates queued and not yet processed.
func (e *Engine[T]) Backlog() int {
	n := 0
	for _, s := range e.shards {
		n += s.backlog()
	}
	return n
}

// Run processes updates and acts on targets until ctx is done, then waits for every
// goroutine it started (a running Actuator call sees its context cancelled) and returns
// ctx's error. When a method of the Source or the Observer panics in one of its workers,
// Run stops in the same way and returns that panic as a *[PanicError]. The logger, if any, comes from ctx (logr.FromContext, as klog.FromContext).
// Updates that arrive before Run are kept and processed when it starts. An Engine runs
// once: a second call returns [ErrRunTwice].
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
	for _, s := range e.shards {
		wg.Go(func() { e.runShard(ctx, s); s.stop() })
	}
	wg.Go(func() { _ = e.queue.Run(ctx) })
	wg.Go(func() { e.retries.run(ctx) })
	<-ctx.Done()
	wg.Wait()
	if err := e.failure.Load(); err != nil {
		logger.Error(err, "stopped", "stack", string(err.Stack))
		return err
	}
	logger.V(2).Info("stopped")
	return parent.Err()
}

// recoverWorker, deferred by a worker's unit of work, stops Run with the panic of a
// Source or Observer method, if one panicked. The locks the unit took are released by
// their own defers as the panic unwinds.
func (e *Engine[T]) recoverWorker() {
	if v := recover(); v != nil {
		err := &PanicError{Value: v, Stack: debug.Stack(), In: "a worker"}
		e.failure.CompareAndSwap(nil, err)
		e.halt(err)
	}
}

func (e *Engine[T]) shardFor(holder string) *shard[T] {
	return e.shards[shardOf(holder, len(e.shards))]
}

// runShard is one event worker: it processes its shard's updates, holders first, until ctx
// is done.
func (e *Engine[T]) runShard(ctx context.Context, s *shard[T]) {
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
		e.process(ctx, w)
	}
}

// process does one unit of a shard's work.
func (e *Engine[T]) process(ctx context.Context, w work[T]) {
	defer e.recoverWorker()
	if w.isHolder {
		e.handleHolder(ctx, w.holder, w.holderEv)
	} else {
		e.handleTarget(w.target, w.targetEv, e.clock.Now(), knownHolder{})
	}
}

// unpause puts the evictions a brake released back in the schedule, at the times they fell
// due, unless their records have let go of the hold meanwhile.
func (e *Engine[T]) unpause(list []unpaused) {
	for _, u := range list {
		k := e.lock(u.key)
		if r := k.current(); r.record != nil && r.phase == held && !r.is(running) {
			if x := k.extra(r, false); x != nil && x.hold == u.h {
				e.queue.Schedule(u.key, r.id, time.Unix(0, u.due))
			}
		}
		k.unlock()
	}
}
