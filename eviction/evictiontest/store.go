package evictiontest

import (
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// store is what Cache and Source share: holders (H) by name and targets (T) by key, indexed
// by holder, and an error that every lookup returns while it is set.
type store[H, T any] struct {
	mu      sync.RWMutex
	holders map[string]H
	targets map[types.NamespacedName]indexed[T]
	on      map[string]map[types.NamespacedName]T // holder -> the targets bound to it
	err     error
}

// indexed is a target and the holders it is indexed under.
type indexed[T any] struct {
	obj     T
	holders []string
}

func (s *store[H, T]) setHolder(name string, h H) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holders == nil {
		s.holders = make(map[string]H)
	}
	s.holders[name] = h
}

func (s *store[H, T]) deleteHolder(name string) (H, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.holders[name]
	delete(s.holders, name)
	return h, ok
}

// setTarget stores t under key, bound to holders, in place of the target of that key.
func (s *store[H, T]) setTarget(key types.NamespacedName, t T, holders []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.targets == nil {
		s.targets = make(map[types.NamespacedName]indexed[T])
		s.on = make(map[string]map[types.NamespacedName]T)
	}
	s.unindex(key)
	s.targets[key] = indexed[T]{t, holders}
	for _, h := range holders {
		if s.on[h] == nil {
			s.on[h] = make(map[types.NamespacedName]T)
		}
		s.on[h][key] = t
	}
}

func (s *store[H, T]) deleteTarget(key types.NamespacedName) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.targets[key]
	s.unindex(key)
	delete(s.targets, key)
	return t.obj, ok
}

func (s *store[H, T]) unindex(key types.NamespacedName) {
	for _, h := range s.targets[key].holders {
		delete(s.on[h], key)
		if len(s.on[h]) == 0 {
			delete(s.on, h)
		}
	}
}

func (s *store[H, T]) setError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// read runs f under the read lock, unless an error is set, and returns that error.
func (s *store[H, T]) read(f func()) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.err == nil {
		f()
	}
	return s.err
}

func (s *store[H, T]) holder(name string) (h H, ok bool, err error) {
	err = s.read(func() { h, ok = s.holders[name] })
	return h, ok, err
}

func (s *store[H, T]) target(key types.NamespacedName) (T, bool, error) {
	var t indexed[T]
	var ok bool
	err := s.read(func() { t, ok = s.targets[key] })
	return t.obj, ok, err
}

// targetsOn returns the targets bound to holder, in no particular order.
func (s *store[H, T]) targetsOn(holder string) (out []T, err error) {
	err = s.read(func() { out = slices.AppendSeq(make([]T, 0, len(s.on[holder])), maps.Values(s.on[holder])) })
	return out, err
}
