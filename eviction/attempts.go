package eviction

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// attempt counts the attempts of the eviction of one pod, by UID, while it runs or fails.
type attempt struct {
	uid types.UID
	n   int
}

// attemptBook holds the attempt counters of the evictions that run now or have failed and
// wait to retry. It is safe for concurrent use; the zero value is empty and ready.
type attemptBook struct {
	mu sync.Mutex
	m  map[types.NamespacedName]attempt
}

// next counts an attempt of evicting the pod key with uid and returns its number.
func (b *attemptBook) next(key types.NamespacedName, uid types.UID) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[types.NamespacedName]attempt)
	}
	a := b.m[key]
	if a.uid != uid {
		a = attempt{uid: uid}
	}
	a.n++
	b.m[key] = a
	return a.n
}

// evicting reports whether an eviction of the pod key with uid runs or has failed and waits
// to retry.
func (b *attemptBook) evicting(key types.NamespacedName, uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.m[key]
	return ok && a.uid == uid
}

// end forgets the attempts of key and reports whether there were any.
func (b *attemptBook) end(key types.NamespacedName) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.m[key]
	delete(b.m, key)
	return ok
}
