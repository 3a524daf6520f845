package engine

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// view is one target and its bindings' holders as a decision sees them. newView fills all
// of it, for an update and the recheck alike, so that decide never meets half of one; it
// lives in a stripe's scratch space, reused.
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

func (v *view) boundTo(name string) bool { return v.binding(name) >= 0 }

// holderReader reads a binding's holder: as the Engine was told (updates), or from the
// Source (the recheck).
type holderReader func(name string, now time.Time) (holderView, error)

// newView fills v with the target obj (found false: none) and its holders, read with read.
// After an error, v is not to be decided from.
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

func (e *Engine[T]) sourceHolder(name, doing string) (Holder, bool, error) {
	h, found, err := orNotFound(e.src.Holder(name))
	if err != nil {
		return h, false, fmt.Errorf("engine: %s holder %s: %w", doing, name, err)
	}
	return h, found, nil
}

// knownHolder is the holderReader of updates. A holder the Engine was not told of is read
// from the Source at each decision, its taints' first sight kept, so that a target fed
// before its holder does not see it untainted. gone, being deleted, does not exist.
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

// currentHolder is the holderReader of the recheck: the Source's holder, its taints started
// against what the Engine knows.
func (e *Engine[T]) currentHolder(name string, now time.Time) (holderView, error) {
	h, found, err := e.sourceHolder(name, "recheck")
	if err != nil || !found {
		return holderView{}, err
	}
	return holderView{found: true, taints: e.holders.start(name, h.Taints, now), group: h.Group}, nil
}
