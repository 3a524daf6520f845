package evictiontest

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
)

// Source is an in-memory [engine.Source] whose target objects are [engine.Target] values
// themselves, indexed by the holders of their bindings: set holders and targets, then tell
// the Engine, as an informer would. Do not change the slices of a value after setting it.
// The zero value is an empty Source ready to use.
type Source struct {
	s store[engine.Holder, engine.Target]
}

var _ engine.Source[engine.Target] = (*Source)(nil)

// SetHolder stores h, replacing the holder of the same name.
func (s *Source) SetHolder(h engine.Holder) { s.s.setHolder(h.Name, h) }

// DeleteHolder removes the holder name and returns it, if there was one.
func (s *Source) DeleteHolder(name string) (engine.Holder, bool) { return s.s.deleteHolder(name) }

// SetTarget stores t, replacing the target of the same key.
func (s *Source) SetTarget(t engine.Target) {
	holders := make([]string, len(t.Bindings))
	for i, b := range t.Bindings {
		holders[i] = b.Holder
	}
	s.s.setTarget(t.Key, t, holders)
}

// DeleteTarget removes the target key and returns it, if there was one.
func (s *Source) DeleteTarget(key types.NamespacedName) (engine.Target, bool) {
	return s.s.deleteTarget(key)
}

// SetError makes every lookup fail with err until it is called with nil.
func (s *Source) SetError(err error) { s.s.setError(err) }

// Target returns the target key.
func (s *Source) Target(key types.NamespacedName) (engine.Target, bool, error) {
	return s.s.target(key)
}

// TargetsOn returns the targets bound to holder, ordered by key.
func (s *Source) TargetsOn(holder string) ([]engine.Target, error) {
	out, err := s.s.targetsOn(holder)
	slices.SortFunc(out, func(a, b engine.Target) int {
		return cmp.Or(cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Name, b.Key.Name))
	})
	return out, err
}

// Holder returns the holder name.
func (s *Source) Holder(name string) (engine.Holder, bool, error) { return s.s.holder(name) }

// Locate returns t's key and the holder of its first binding.
func (s *Source) Locate(t engine.Target) (types.NamespacedName, string) {
	if len(t.Bindings) == 0 {
		return t.Key, ""
	}
	return t.Key, t.Bindings[0].Holder
}

// Describe copies t into d.
func (s *Source) Describe(t engine.Target, d *engine.Target) {
	d.Key, d.UID, d.Leaving, d.Owner, d.Created = t.Key, t.UID, t.Leaving, t.Owner, t.Created
	d.Bindings = append(d.Bindings[:0], t.Bindings...)
}
