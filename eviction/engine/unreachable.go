package engine

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
)

// unreachable keeps the evictions whose last attempt failed because the Actuator could not
// reach what it acts through (Options.Unreachable said so), until [Engine.RetryUnreachable]
// sends them back to a worker, and those it sent back, until their attempt ends: one of
// these that fails again waits its backoff, so that a backend that comes and goes (or one
// that answers every request but the Actuator's) gets no more than one extra attempt per
// eviction for each attempt the backoff allows. It holds nothing while every attempt
// succeeds or fails for another reason, and is safe for concurrent use; the zero value is
// empty and ready.
type unreachable struct {
	mu        sync.Mutex
	keys      map[types.NamespacedName]recordID // failed as unreachable, not sent back yet
	forwarded map[types.NamespacedName]recordID // sent back at once, attempt not ended yet
	n         atomic.Int32                      // len(keys) + len(forwarded), read without the lock: most outcomes find none
	// returns counts the calls of RetryUnreachable, so that an attempt that ran across
	// one knows it.
	returns atomic.Uint64
}

// note records the outcome of an attempt on the eviction id of key: failed says it failed
// as unreachable, and back that RetryUnreachable was called while it ran. It reports
// whether the eviction is to be retried at once: when back, unless the attempt was itself
// sent back at once. A failure kept (not retried at once) waits for RetryUnreachable; any
// other outcome forgets the eviction (a later failure of another kind keeps its backoff).
func (u *unreachable) note(key types.NamespacedName, id recordID, failed, back bool) bool {
	if !failed && u.n.Load() == 0 {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	prev, ok := u.forwarded[key]
	wasForwarded := ok && prev == id
	delete(u.forwarded, key)
	delete(u.keys, key)
	now := false
	switch {
	case !failed || wasForwarded:
	case back:
		u.forwarded = put(u.forwarded, key, id)
		now = true
	default:
		u.keys = put(u.keys, key, id)
	}
	u.n.Store(int32(len(u.keys) + len(u.forwarded)))
	return now
}

// forward records that the eviction id of key was sent back at once.
func (u *unreachable) forward(key types.NamespacedName, id recordID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.forwarded = put(u.forwarded, key, id)
	u.n.Store(int32(len(u.keys) + len(u.forwarded)))
}

func put(m map[types.NamespacedName]recordID, key types.NamespacedName, id recordID) map[types.NamespacedName]recordID {
	if m == nil {
		m = make(map[types.NamespacedName]recordID)
	}
	m[key] = id
	return m
}

// take returns the evictions kept and forgets them.
func (u *unreachable) take() map[types.NamespacedName]recordID {
	u.mu.Lock()
	defer u.mu.Unlock()
	keys := u.keys
	u.keys = nil
	u.n.Store(int32(len(u.forwarded)))
	return keys
}

// RetryUnreachable sends every eviction whose last attempt failed with an error for which
// Options.Unreachable returned true, and that still waits for its retry, back to a worker
// now: the caller has seen that what the Actuator acts through (an API server, say)
// answers again, so these retries need not wait out a backoff that grew while it was away.
// It returns how many it sent back. The backoff is kept where it was: an eviction sent back
// that fails again, as unreachable or not, waits its next backoff, and only a failure of a
// later attempt can send it back again. So however often it is called (a backend that comes
// and goes, or one that answers every request but the Actuator's), each eviction gets at
// most one attempt more for each attempt its backoff allows. Evictions that failed for
// other reasons keep their backoff. An attempt under way during the call that then fails
// as unreachable is retried at once too, as if it had failed first. Without
// Options.Unreachable it does nothing.
//
// It returns at once, without waiting for the attempts, and is safe for concurrent use, but
// not from within an Actuator, Source or Observer call of this Engine.
func (e *Engine[T]) RetryUnreachable() int {
	if e.opts.Unreachable == nil {
		return 0
	}
	e.unreach.returns.Add(1)
	n := 0
	for key, id := range e.unreach.take() {
		k := e.lock(key)
		now := e.clock.Now()
		if r := k.byID(id); r.record != nil && r.phase == retrying && !r.is(running) {
			e.queue.Schedule(key, id, now)
			e.unreach.forward(key, id) // under k's lock: before the attempt can end
			n++
		}
		k.unlock()
	}
	return n
}

// noteUnreachable records how the attempt on the eviction id of key ended (err nil for an
// end that is not a failure), for RetryUnreachable, and reports whether its retry is due at
// once: it failed as unreachable while RetryUnreachable was called (returns is the count of
// its calls when the attempt started), and was not itself sent back at once.
func (e *Engine[T]) noteUnreachable(key types.NamespacedName, id recordID, err error, returns uint64) bool {
	if e.opts.Unreachable == nil {
		return false
	}
	failed := err != nil && e.opts.Unreachable(err)
	return e.unreach.note(key, id, failed, failed && e.unreach.returns.Load() != returns)
}
