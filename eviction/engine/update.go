package engine

import (
	"context"
	"time"

	"github.com/go-logr/logr"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/tolerations"
)

// sourceErrorInterval is how often a lookup that keeps failing is logged as an error.
const sourceErrorInterval = time.Minute

// holderEvent is a holder's latest update; or, with resync, a request to decide again about
// its targets against what is known of it (after a failed listing).
type holderEvent struct {
	holder  Holder
	deleted bool
	resync  bool
}

// keepHolderEvent keeps a queued update over a resync, which it does the work of.
func keepHolderEvent(queued, next holderEvent) holderEvent {
	if next.resync && !queued.resync {
		return queued
	}
	return next
}

// targetEvent is a target's latest update: the object (what a decision falls back on when
// the Source fails), or its deletion.
type targetEvent[T any] struct {
	obj     T
	deleted bool
}

// onHolder records the holder's taints and group, and decides again about each of its
// targets, from the Source's listing.
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

func (e *Engine[T]) onTarget(ctx context.Context, key types.NamespacedName, ev targetEvent[T]) {
	defer e.recoverWorker()
	e.decideOn(ctx, key, ev, e.knownHolder(""), e.clock.Now())
}

// decideOn decides about the target key from the Source, read under its lock so that the
// last decision is made from the newest state, whichever worker makes it; or, when the
// Source fails, from ev's object, and the lookup is retried.
func (e *Engine[T]) decideOn(ctx context.Context, key types.NamespacedName, ev targetEvent[T], read holderReader, now time.Time) {
	st := e.store.lock(key)
	defer st.unlock()
	obj, found, err := orNotFound(e.src.Target(key))
	if err != nil {
		obj, found = ev.obj, !ev.deleted
	}
	c := &cursor[T]{e: e, st: st, key: key, ev: st.evictions[key]}
	defer c.arm()
	v := &st.scratch.view
	if herr := e.newView(v, obj, found, read, now); herr != nil {
		err = herr
		_ = e.newView(v, obj, found, e.lastKnownHolder, now) // it reads no Source: it cannot fail
	}
	e.looked(ctx, c, err, now)
	c.settle(v, now)
}

// relookup decides again about c's target from the Source, as an update would: the retry
// of a failed lookup, and after a call, for a target that replaced the one acted on.
func (e *Engine[T]) relookup(ctx context.Context, c *cursor[T], now time.Time) {
	obj, found, err := orNotFound(e.src.Target(c.key))
	v := &c.st.scratch.view
	if err == nil {
		err = e.newView(v, obj, found, e.knownHolder(""), now)
	}
	if e.looked(ctx, c, err, now) {
		c.settle(v, now)
	}
}

// orNotFound returns a Source lookup's results, a NotFound error as found false.
func orNotFound[V any](v V, found bool, err error) (V, bool, error) {
	if err != nil && apierrors.IsNotFound(err) {
		return v, false, nil
	}
	return v, found, err
}

// looked counts, logs and retries a failed lookup of c's target; it reports err == nil.
func (e *Engine[T]) looked(ctx context.Context, c *cursor[T], err error, now time.Time) bool {
	if err != nil {
		e.stats.sourceErrors.Add(1)
		e.logLookup(ctx, c.lookupFailed(now), "looking up a target failed; will retry", err, "target", c.key.String())
		return false
	}
	c.lookupSucceeded()
	return true
}

// lastKnownHolder is the holderReader of an update whose holder lookup failed: what the
// Engine knows, or an unknown holder taken as untainted until the retry.
func (e *Engine[T]) lastKnownHolder(name string, _ time.Time) (holderView, error) {
	k, ok := e.holders.get(name)
	return holderView{found: ok, taints: k.started, group: k.group}, nil
}

func (e *Engine[T]) logLookup(ctx context.Context, logIt bool, msg string, err error, kv ...any) {
	logger := logr.FromContextOrDiscard(ctx)
	if logIt {
		logger.Error(err, msg, kv...)
		return
	}
	logger.V(2).Info(msg, append(kv, "err", err)...)
}
