package engine

import (
	"sync"
	"sync/atomic"
)

// RetryUnreachable sends every eviction whose last call failed with an error for which
// Options.Unreachable returned true, and that still waits for its retry, back to a worker
// now: the caller has seen that what the Actuator acts through (an API server, say)
// answers again, so these retries need not wait out a backoff that grew while it was away.
// It returns how many it sent back. The backoff is kept: one sent back that fails again
// waits its next backoff, and only a failure of a later call can send it back again, so
// however often it is called (a backend that comes and goes), each eviction gets at most
// one call more for each call its backoff allows. A call under way that then fails as
// unreachable is retried at once too. Without Options.Unreachable it does nothing.
//
// It returns at once, without waiting for the calls, and is safe for concurrent use.
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
// looks at no other. Its lock guards the set, and is taken under a stripe lock or alone.
type unreachableIndex struct {
	mu  sync.Mutex
	set map[*eviction]struct{}
	// returns counts the calls of RetryUnreachable, so that a call that ran across one,
	// and an eviction that failed before one, know it.
	returns atomic.Uint64
}

// mark adds ev, and returns the count of RetryUnreachable calls so far.
func (u *unreachableIndex) mark(ev *eviction) uint64 {
	returns := u.returns.Load()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.set == nil {
		u.set = make(map[*eviction]struct{})
	}
	u.set[ev] = struct{}{}
	return returns
}

func (u *unreachableIndex) forget(ev *eviction) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.set, ev)
}

// take returns the evictions and forgets them.
func (u *unreachableIndex) take() []*eviction {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]*eviction, 0, len(u.set))
	for ev := range u.set {
		out = append(out, ev)
	}
	u.set = nil
	return out
}
