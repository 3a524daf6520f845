package evictiontest

import (
	"context"
	"sync"

	"github.com/taintevict/taintevict/eviction"
)

// Deleter is an [eviction.Deleter] that records every call. Each call succeeds unless Func,
// set before the Deleter is used, decides otherwise. The zero value is ready to use.
type Deleter struct {
	// Func, when not nil, is called for each Delete and its result returned.
	Func func(ctx context.Context, pod eviction.PodRef) error

	mu    sync.Mutex
	calls []eviction.PodRef
}

var _ eviction.Deleter = (*Deleter)(nil)

// Delete records pod and returns Func's result, or nil.
func (d *Deleter) Delete(ctx context.Context, pod eviction.PodRef) error {
	d.mu.Lock()
	d.calls = append(d.calls, pod)
	d.mu.Unlock()
	if d.Func != nil {
		return d.Func(ctx, pod)
	}
	return nil
}

// Calls returns a copy of the pods Delete was called with, in call order.
func (d *Deleter) Calls() []eviction.PodRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]eviction.PodRef(nil), d.calls...)
}

// Count returns how many times Delete was called.
func (d *Deleter) Count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.calls)
}
