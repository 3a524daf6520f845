package engine

import (
	"context"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// handleHolder stores a holder's NoExecute taints and decides again about its targets.
func (e *Engine[T]) handleHolder(ctx context.Context, name string, ev holderEvent) {
	now := e.clock.Now()
	var had, has bool
	switch {
	case ev.resync:
		had = true // list again: the targets are decided against the taints known now
	case ev.deleted:
		had = e.taints.set(name, nil, now)
	default:
		taints := tolerations.NoExecuteTaints(ev.holder.Taints)
		had, has = e.taints.set(name, taints, now), len(taints) > 0
	}
	if !had && !has {
		return // nothing could be open for its targets, and nothing becomes due
	}
	targets, err := e.src.TargetsOn(name)
	if err != nil {
		logr.FromContextOrDiscard(ctx).V(2).Info("listing the targets of a holder failed; will retry", "holder", name, "err", err)
		e.retries.failed(holderRetryKey(name), now, func() {
			e.shardFor(name).putHolder(name, holderEvent{holder: Holder{Name: name}, resync: true})
		})
		return
	}
	e.retries.succeeded(func() string { return holderRetryKey(name) })
	known := knownHolder{name: name, taints: e.taints.get(name)}
	if ev.deleted {
		known.gone = true
	}
	for _, t := range targets {
		key, _ := e.src.Locate(t)
		e.handleTarget(key, targetEvent[T]{obj: t}, now, known)
	}
}

// knownHolder is what the processing of a holder's update knows of that holder, for the
// decisions about its targets: its name, its started NoExecute taints (looked up once for
// all of them), and whether it was deleted. The zero knownHolder knows of none.
type knownHolder struct {
	name   string
	taints []v1.Taint
	gone   bool
}
