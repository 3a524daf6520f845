package engine

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/taintevict/taintevict/tolerations"
)

// view is one target and its holders as a decision sees them: what the Source describes of
// the target, and for each binding its holder's started NoExecute taints and group. newView
// fills all of it, for an update and for the recheck alike, so that decide never meets
// half of one. It lives in a stripe's scratch space, reused from decision to decision.
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

// binding returns the index of the binding to the holder name, or -1.
func (v *view) binding(name string) int {
	for i := range v.target.Bindings {
		if v.target.Bindings[i].Holder == name {
			return i
		}
	}
	return -1
}

// lost reports whether the target is bound to the holder name, which does not exist.
func (v *view) lost(name string) bool { i := v.binding(name); return i >= 0 && !v.holders[i].found }

// boundTo reports whether the target is bound to the holder name.
func (v *view) boundTo(name string) bool { return v.binding(name) >= 0 }

// holderReader reads a binding's holder for a view: from what the Engine was told
// (updates), or from the Source (the recheck).
type holderReader func(name string, now time.Time) (holderView, error)

// newView fills v with the target obj (found false: there is none) and its holders, read
// with read. It returns the error of a holder lookup that failed; v is then not to be
// decided from.
func (e *Engine[T]) newView(v *view, obj T, found bool, read holderReader, now time.Time) error {
	v.exists = found
	v.target = Target{Bindings: v.target.Bindings[:0]}
	v.holders = v.holders[:0]
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

// sourceHolder reads the holder name from the Source: found false, with no error, when it
// has none.
func (e *Engine[T]) sourceHolder(name, doing string) (Holder, bool, error) {
	h, found, err := e.src.Holder(name)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return Holder{}, false, fmt.Errorf("engine: %s holder %s: %w", doing, name, err)
	case err != nil:
		return Holder{}, false, nil
	}
	return h, found, nil
}

// knownHolder is the holderReader of updates: the holder as the Engine was told of it. A
// holder it was not told of is read from the Source at each decision, its taints' first
// sight kept, so that an Engine fed a target before its holder does not take a tainted
// holder for untainted. gone names a holder whose deletion is being processed: it does not
// exist.
func (e *Engine[T]) knownHolder(gone string) holderReader {
	return func(name string, now time.Time) (holderView, error) {
		if name == gone {
			return holderView{}, nil
		}
		if k, ok := e.holders.get(name); ok && !k.learned {
			return holderView{found: true, taints: k.started, group: k.group}, nil
		}
		h, found, err := e.sourceHolder(name, "look up")
		if err != nil || !found {
			return holderView{}, err
		}
		e.holders.set(name, h.Group, tolerations.NoExecuteTaints(h.Taints), now, true)
		k, _ := e.holders.get(name)
		return holderView{found: true, taints: k.started, group: k.group}, nil
	}
}

// currentHolder is the holderReader of the recheck: the holder as the Source has it now,
// its taints started against what the Engine knows.
func (e *Engine[T]) currentHolder(name string, now time.Time) (holderView, error) {
	h, found, err := e.sourceHolder(name, "recheck")
	if err != nil || !found {
		return holderView{}, err
	}
	return holderView{found: true, taints: e.holders.start(name, h.Taints, now), group: h.Group}, nil
}
