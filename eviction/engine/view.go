package engine

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/tolerations"
)

// view is one target and its holders as a decision sees them at an instant: what the
// Source describes of the target, and for each binding its holder's started NoExecute
// taints and group. newView fills all of it, for an update and for the recheck alike, so
// that decide never meets half of one. It lives in a stripe's scratch space, its storage
// reused from decision to decision.
type view struct {
	exists  bool
	target  Target
	holders []holderView // holders[i]: that of target.Bindings[i]
}

// holderView is a binding's holder as a decision sees it.
type holderView struct {
	found  bool       // the holder exists (is known, or the Source has it)
	taints []v1.Taint // its NoExecute taints, started (see startTaints)
	group  string
}

// lost reports whether the target is bound to the holder name and that holder does not
// exist: it was deleted.
func (v *view) lost(name string) bool {
	for i := range v.target.Bindings {
		if v.target.Bindings[i].Holder == name {
			return !v.holders[i].found
		}
	}
	return false
}

// boundTo reports whether the target is bound to the holder name.
func (v *view) boundTo(name string) bool {
	for i := range v.target.Bindings {
		if v.target.Bindings[i].Holder == name {
			return true
		}
	}
	return false
}

// holderReader reads a binding's holder for a view at now: from what the Engine knows
// (updates), or from the Source (the recheck).
type holderReader func(name string, now time.Time) (holderView, error)

// newView fills v with the target obj (found false: there is none) and its holders, read
// with read. It returns the error of a holder lookup that failed; v is then not to be
// decided from.
func (e *Engine[T]) newView(v *view, obj T, found bool, read holderReader, now time.Time) error {
	v.exists = found
	v.target.Key, v.target.UID, v.target.Leaving, v.target.GoneBy = types.NamespacedName{}, "", "", time.Time{}
	v.target.Owner, v.target.Created = Owner{}, time.Time{}
	v.target.Bindings, v.holders = v.target.Bindings[:0], v.holders[:0]
	if !found {
		return nil
	}
	e.src.Describe(obj, &v.target)
	if v.target.Leaving != "" {
		return nil // decided without its holders
	}
	for _, b := range v.target.Bindings {
		h, err := read(b.Holder, now)
		if err != nil {
			return err
		}
		v.holders = append(v.holders, h)
	}
	return nil
}

// knownHolder is the holderReader of updates: the holder as the Engine was told of it. A
// holder it was not told of is read from the Source, at each decision, and its taints'
// first sight is kept, so that an Engine started after a holder was tainted, or fed
// targets and not their holders, does not take a tainted holder for untainted. Such a
// holder does not count for the budgets (the brake counts the holders it is told of). gone
// names a holder whose deletion is being processed: it does not exist, and is not looked
// up.
func (e *Engine[T]) knownHolder(gone string) holderReader {
	return func(name string, now time.Time) (holderView, error) {
		if name == gone {
			return holderView{}, nil
		}
		if k, ok := e.holders.get(name); ok && !k.learned {
			return holderView{found: true, taints: k.started, group: k.group}, nil
		}
		h, found, err := e.src.Holder(name)
		switch {
		case err != nil && !apierrors.IsNotFound(err):
			return holderView{}, fmt.Errorf("engine: look up holder %s: %w", name, err)
		case err != nil || !found:
			return holderView{}, nil
		}
		taints := tolerations.NoExecuteTaints(h.Taints)
		e.holders.set(name, h.Group, taints, now, true)
		k, _ := e.holders.get(name)
		return holderView{found: true, taints: k.started, group: k.group}, nil
	}
}

// currentHolder is the holderReader of the recheck: the holder as the Source has it now,
// its taints started against what the Engine knows.
func (e *Engine[T]) currentHolder(name string, now time.Time) (holderView, error) {
	h, found, err := e.src.Holder(name)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return holderView{}, fmt.Errorf("engine: recheck holder %s: %w", name, err)
	case err != nil || !found:
		return holderView{}, nil
	}
	return holderView{found: true, taints: e.holders.start(name, h.Taints, now), group: h.Group}, nil
}
