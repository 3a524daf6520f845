package engine

import (
	"context"
	"time"

	"github.com/go-logr/logr"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/tolerations"
)

// sourceErrorInterval bounds how long a lookup of the Source that keeps failing goes
// without an error in the log: the first failure is logged, then one a minute.
const sourceErrorInterval = time.Minute

// holderEvent is a holder's latest update, deleted when it was deleted; or, with resync, a
// request to decide again about its targets against what is known of it (after a failed
// listing).
type holderEvent struct {
	holder  Holder
	deleted bool
	resync  bool
}

// keepHolderEvent chooses between a holder update that waits and the next: a resync does
// not replace an update, which lists the targets anyway, with newer taints.
func keepHolderEvent(queued, next holderEvent) holderEvent {
	if next.resync && !queued.resync {
		return queued
	}
	return next
}

// targetEvent is a target's latest update: the object it carried (what a decision falls
// back on when the Source fails), or its deletion.
type targetEvent[T any] struct {
	obj     T
	deleted bool
}

// onHolder processes a holder's update: it records the holder's taints and group, and
// decides again about each of its targets, from the listing of the Source.
func (e *Engine[T]) onHolder(ctx context.Context, name string, ev holderEvent) {
	defer e.recoverWorker()
	now := e.clock.Now()
	var had, has bool
	gone := ""
	switch {
	case ev.resync:
		had = true // list again: the targets are decided against what is known now
	case ev.deleted:
		had, gone = e.holders.remove(name), name
	default:
		taints := tolerations.NoExecuteTaints(ev.holder.Taints)
		had, has = e.holders.set(name, ev.holder.Group, taints, now, false), len(taints) > 0
	}
	if !had && !has {
		return // nothing could be open for its targets, and nothing becomes due
	}
	targets, err := e.src.TargetsOn(name)
	if err != nil {
		e.stats.sourceErrors.Add(1)
		n, logIt := e.intake.HolderFailed(name, holderEvent{holder: Holder{Name: name}, resync: true}, now)
		e.logLookup(ctx, logIt, "listing the targets of a holder failed; will retry", err, "holder", name, "failures", n)
		return
	}
	e.intake.HolderListed(name)
	read := e.knownHolder(gone)
	for _, t := range targets {
		key, _ := e.src.Locate(t)
		e.decideOn(ctx, key, targetEvent[T]{obj: t}, read, now)
	}
}

// onTarget processes a target's update.
func (e *Engine[T]) onTarget(ctx context.Context, key types.NamespacedName, ev targetEvent[T]) {
	defer e.recoverWorker()
	e.decideOn(ctx, key, ev, e.knownHolder(""), e.clock.Now())
}

// decideOn decides about the target key from its state in the Source, read under its lock
// so that the last decision about a target is made from the newest state, whichever worker
// makes it; or, when the Source fails, from the object ev carries, and the lookup is
// retried.
func (e *Engine[T]) decideOn(ctx context.Context, key types.NamespacedName, ev targetEvent[T], read holderReader, now time.Time) {
	st := e.store.lock(key)
	defer st.unlock()
	obj, found, lookupErr := e.src.Target(key)
	switch {
	case lookupErr != nil && apierrors.IsNotFound(lookupErr):
		found, lookupErr = false, nil
	case lookupErr != nil:
		obj, found = ev.obj, !ev.deleted
	}
	c := &cursor[T]{e: e, st: st, key: key, ev: st.evictions[key]}
	defer c.arm()
	v := &st.scratch.view
	if err := e.newView(v, obj, found, read, now); err != nil {
		lookupErr = err
		_ = e.newView(v, obj, found, e.lastKnownHolder, now) // it reads no Source: it cannot fail
	}
	if lookupErr != nil {
		e.stats.sourceErrors.Add(1)
		e.logLookup(ctx, c.lookupFailed(now), "looking up a target failed; will retry", lookupErr, "target", key.String())
	} else {
		c.lookupSucceeded()
	}
	c.settle(v, now)
}

// relookup decides again about c's target from the Source, as an update would: the retry
// of a lookup that failed, and, after a call, for a target that replaced the one acted on.
func (e *Engine[T]) relookup(c *cursor[T], now time.Time) {
	key := c.key
	obj, found, err := e.src.Target(key)
	if err != nil && apierrors.IsNotFound(err) {
		found, err = false, nil
	}
	v := &c.st.scratch.view
	if err == nil {
		err = e.newView(v, obj, found, e.knownHolder(""), now)
	}
	if err != nil {
		e.stats.sourceErrors.Add(1)
		e.logLookup(e.runCtx(), c.lookupFailed(now), "looking up a target failed; will retry", err, "target", key.String())
		return
	}
	c.lookupSucceeded()
	c.settle(v, now)
}

// lastKnownHolder is the holderReader of an update whose holder lookup failed: what the
// Engine knows, or an unknown holder taken as untainted until the retry.
func (e *Engine[T]) lastKnownHolder(name string, _ time.Time) (holderView, error) {
	k, ok := e.holders.get(name)
	return holderView{found: ok, taints: k.started, group: k.group}, nil
}

// logLookup logs a failed lookup of the Source: at V(2) each time, and as an error when
// logIt says so (the first failure of a key, then one a minute).
func (e *Engine[T]) logLookup(ctx context.Context, logIt bool, msg string, err error, kv ...any) {
	logger := logr.FromContextOrDiscard(ctx)
	if logIt {
		logger.Error(err, msg, kv...)
		return
	}
	logger.V(2).Info(msg, append(kv, "err", err)...)
}
