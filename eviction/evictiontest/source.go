package evictiontest

import (
	"cmp"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
)

// Source is an in-memory [engine.Source] whose target objects are [engine.Target] values
// themselves: a test or a simulation sets holders and targets by hand, then tells the
// Engine (HolderUpdated, TargetUpdated), as an informer would. It indexes targets by the
// holders of their bindings. It keeps the values it is given; their slices must not be
// changed afterwards (set a new value instead), as with informer caches. It is safe for
// concurrent use; the zero value is an empty Source ready to use.
type Source struct {
	mu      sync.RWMutex
	holders map[string]engine.Holder
	targets map[types.NamespacedName]engine.Target
	on      map[string]map[types.NamespacedName]struct{} // holder -> targets bound to it
	err     error
}

var _ engine.Source[engine.Target] = (*Source)(nil)

// SetHolder stores h, replacing the holder of the same name.
func (s *Source) SetHolder(h engine.Holder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holders == nil {
		s.holders = make(map[string]engine.Holder)
	}
	s.holders[h.Name] = h
}

// DeleteHolder removes the holder name and returns it, if there was one.
func (s *Source) DeleteHolder(name string) (engine.Holder, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.holders[name]
	delete(s.holders, name)
	return h, ok
}

// SetTarget stores t, replacing the target of the same key.
func (s *Source) SetTarget(t engine.Target) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.targets == nil {
		s.targets = make(map[types.NamespacedName]engine.Target)
		s.on = make(map[string]map[types.NamespacedName]struct{})
	}
	if old, ok := s.targets[t.Key]; ok {
		s.unindex(old)
	}
	s.targets[t.Key] = t
	for _, b := range t.Bindings {
		set := s.on[b.Holder]
		if set == nil {
			set = make(map[types.NamespacedName]struct{})
			s.on[b.Holder] = set
		}
		set[t.Key] = struct{}{}
	}
}

// DeleteTarget removes the target key and returns it, if there was one.
func (s *Source) DeleteTarget(key types.NamespacedName) (engine.Target, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.targets[key]
	if ok {
		delete(s.targets, key)
		s.unindex(t)
	}
	return t, ok
}

func (s *Source) unindex(t engine.Target) {
	for _, b := range t.Bindings {
		if set := s.on[b.Holder]; set != nil {
			delete(set, t.Key)
			if len(set) == 0 {
				delete(s.on, b.Holder)
			}
		}
	}
}

// SetError makes every lookup fail with err until it is called with nil.
func (s *Source) SetError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// Target returns the target key.
func (s *Source) Target(key types.NamespacedName) (engine.Target, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.err != nil {
		return engine.Target{}, false, s.err
	}
	t, ok := s.targets[key]
	return t, ok, nil
}

// TargetsOn returns the targets bound to holder, ordered by key.
func (s *Source) TargetsOn(holder string) ([]engine.Target, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.err != nil {
		return nil, s.err
	}
	out := make([]engine.Target, 0, len(s.on[holder]))
	for key := range s.on[holder] {
		out = append(out, s.targets[key])
	}
	slices.SortFunc(out, func(a, b engine.Target) int {
		return cmp.Or(cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Name, b.Key.Name))
	})
	return out, nil
}

// Holder returns the holder name.
func (s *Source) Holder(name string) (engine.Holder, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.err != nil {
		return engine.Holder{}, false, s.err
	}
	h, ok := s.holders[name]
	return h, ok, nil
}

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
