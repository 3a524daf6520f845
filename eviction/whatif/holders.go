package whatif

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// Holders is a what-if of holders of any kind (DRA devices, for one), as [Nodes] is of
// nodes, over two Sources: the holders as they are and as a change makes them.
type Holders[T any] struct {
	// Before and After read the targets and holders as they are, and as the change makes
	// them. The targets are the same in both; only the holders' taints differ.
	Before, After engine.Source[T]
	// IDs names every holder to look at: the engine is told those that carry NoExecute
	// taints (all of them, with a Brake); those whose NoExecute taints differ between
	// Before and After are the changed ones.
	IDs []string
	// Options are as for [Nodes]; set Engine.Tolerations to the rules of the holders (the
	// device rules, for devices).
	Options Options
}

// TargetFate is the what-if of one target bound to a changed holder: its fates before and
// after the change, and its bindings to holders with NoExecute taints after it.
type TargetFate[T any] struct {
	Target        T
	Key           types.NamespacedName
	Before, After Fate
	Bound         []Bound
}

// Bound is a binding to a holder with NoExecute taints, and the why of its tolerations.
type Bound struct {
	Holder string
	Why    []Match
}

// Changed reports whether the change changes the target's verdict or time.
func (t TargetFate[T]) Changed() bool { return changed(t.Before, t.After) }

// HoldersResult is a what-if of holders: the changed holders, the fate of every target
// bound to one of them (before or after), earliest eviction first, and the engine's
// timelines (Before nil when no holder carried a NoExecute taint before the change).
type HoldersResult[T any] struct {
	Start         time.Time
	Changed       []engine.Holder
	Targets       []TargetFate[T]
	Before, After *Timeline
}

// Simulate runs the what-if h, as [Nodes] does for nodes: an engine over h.After, and,
// when a holder already carried NoExecute taints, one over h.Before. It fails on a zero
// Options.Start, a nil Source, invalid engine options, and a failing Source lookup.
func (h Holders[T]) Simulate(ctx context.Context) (*HoldersResult[T], error) {
	if err := h.Options.check(); err != nil {
		return nil, err
	}
	if h.Before == nil || h.After == nil {
		return nil, errors.New("whatif: Holders.Before or After is nil")
	}
	before, after, changed, wasTainted, err := h.read()
	if err != nil {
		return nil, err
	}
	res := &HoldersResult[T]{Start: h.Options.Start, Changed: changed}
	if len(changed) == 0 {
		return res, nil
	}
	res.Before, res.After, err = beforeAfter(true, wasTainted,
		func() (*Timeline, error) { return SimulateHolders(ctx, h.Before, before, h.Options) },
		func() (*Timeline, error) { return SimulateHolders(ctx, h.After, after, h.Options) })
	if err != nil {
		return nil, err
	}
	seen := map[types.NamespacedName]bool{}
	for _, c := range changed {
		for _, src := range []engine.Source[T]{h.After, h.Before} {
			targets, err := src.TargetsOn(c.Name)
			if err != nil {
				return nil, fmt.Errorf("whatif: targets on %s: %w", c.Name, err)
			}
			for _, t := range targets {
				var d engine.Target
				if src.Describe(t, &d); seen[d.Key] {
					continue
				}
				seen[d.Key] = true
				tf := TargetFate[T]{Target: t, Key: d.Key, Before: fateIn(res.Before, d.Key, d.Leaving), After: fateIn(res.After, d.Key, d.Leaving)}
				if tf.Bound, err = WhyBound(h.After, t, h.Options.Start, h.Options.Engine); err != nil {
					return nil, err
				}
				res.Targets = append(res.Targets, tf)
			}
		}
	}
	sortFates(res.Targets, func(t *TargetFate[T]) (Fate, types.NamespacedName) { return t.After, t.Key })
	return res, nil
}

// read returns the holders of h.IDs as Before and After give them, those whose NoExecute
// taints differ, and whether any carried one before (a target may be bound to several).
func (h Holders[T]) read() (before, after, changed []engine.Holder, wasTainted bool, err error) {
	ids := slices.Clone(h.IDs)
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		b, _, err := h.Before.Holder(id)
		if err != nil {
			return nil, nil, nil, false, fmt.Errorf("whatif: holder %s: %w", id, err)
		}
		a, _, err := h.After.Holder(id)
		if err != nil {
			return nil, nil, nil, false, fmt.Errorf("whatif: holder %s: %w", id, err)
		}
		b.Name, a.Name = id, id
		before, after = append(before, b), append(after, a)
		if engine.TaintsChanged(b.Taints, a.Taints) {
			changed = append(changed, a)
		}
		wasTainted = wasTainted || len(tolerations.NoExecuteTaints(b.Taints)) > 0
	}
	return before, after, changed, wasTainted, nil
}

// SimulateHolders runs an engine over src, told holders (those with NoExecute taints, or
// all of them with a Brake), from opts.Start to opts.Until (see [Simulate]).
func SimulateHolders[T any](ctx context.Context, src engine.Source[T], holders []engine.Holder, opts Options) (*Timeline, error) {
	gs := goneSource[T]{Source: src, gone: &goneSet{}}
	return Simulate(ctx, opts.Start, opts.Until, opts.Engine, func(eo engine.Options, act engine.Actuator) (Engine, error) {
		e, err := engine.New[T](act, gs, eo)
		if err != nil {
			return nil, err
		}
		for _, h := range holders {
			if opts.Engine.Brake != (engine.Brake{}) || len(tolerations.NoExecuteTaints(h.Taints)) > 0 {
				e.HolderUpdated(h)
			}
		}
		e.Synced() // it was told every holder that counts
		return holderSim[T]{Engine: e, src: gs}, nil
	})
}

// WhyBound returns the [Why] of each binding of t to a holder with NoExecute taints, as
// src describes them, counted from start as opts.DeadlineSource says.
func WhyBound[T any](src engine.Source[T], t T, start time.Time, opts engine.Options) ([]Bound, error) {
	var d engine.Target
	src.Describe(t, &d)
	var out []Bound
	for _, b := range d.Bindings {
		h, found, err := src.Holder(b.Holder)
		if err != nil {
			return nil, fmt.Errorf("whatif: holder %s: %w", b.Holder, err)
		}
		if !found {
			continue
		}
		if why := Why(h.Taints, b.Tolerations, start, opts.DeadlineSource, opts.Tolerations); len(why) > 0 {
			out = append(out, Bound{Holder: b.Holder, Why: why})
		}
	}
	return out, nil
}
