package engine

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// RetryUnreachable sends back to a worker now every eviction waiting for the retry of a
// call that failed as [Options.Unreachable] says, for a caller that has seen what the
// Actuator acts through answer again. A call under way that then fails so is retried at
// once too. It returns how many it sent back, at once. The backoff is kept: one sent back
// that fails again waits its next backoff, so each eviction gets at most one call more per
// call its backoff allows. Without Options.Unreachable it does nothing.
func (e *Engine[T]) RetryUnreachable() int {
	if e.opts.Unreachable == nil {
		return 0
	}
	e.unreach.returns.Add(1)
	evs := e.unreach.take()
	now := e.clock.Now()
	for _, ev := range evs {
		e.queue.Schedule(ev, struct{}{}, now)
	}
	return len(evs)
}

// unreachableIndex holds the evictions that RetryUnreachable may send back, so that it
// looks at no other; its lock guards the set.
type unreachableIndex struct {
	mu      sync.Mutex
	set     map[*eviction]struct{}
	returns atomic.Uint64 // RetryUnreachable's calls
}

func (u *unreachableIndex) mark(ev *eviction) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.set == nil {
		u.set = make(map[*eviction]struct{})
	}
	u.set[ev] = struct{}{}
}

func (u *unreachableIndex) forget(ev *eviction) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.set, ev)
}

func (u *unreachableIndex) take() []*eviction {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := slices.Collect(maps.Keys(u.set))
	u.set = nil
	return out
}
