package engine

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
)

// unreachable keeps the evictions whose last attempt failed because the Actuator could not
// reach what it acts through (Options.Unreachable said so), until [Engine.RetryUnreachable]
// sends them back to a worker. It holds nothing while every attempt succeeds or fails for
// another reason, and is safe for concurrent use; the zero value is empty and ready.
type unreachable struct {
	mu   sync.Mutex
	keys map[types.NamespacedName]recordID
	n    atomic.Int32 // len(keys), read without the lock: most outcomes find none
	// returns counts the calls of RetryUnreachable, so that an attempt that ran across
	// one knows it.
	returns atomic.Uint64
}

// note records the outcome of an attempt on the eviction id of key: kept when it failed as
// unreachable, forgotten otherwise (a later failure of another kind keeps its backoff).
func (u *unreachable) note(key types.NamespacedName, id recordID, failed bool) {
	if !failed && u.n.Load() == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if failed {
		if u.keys == nil {
			u.keys = make(map[types.NamespacedName]recordID)
		}
		u.keys[key] = id
	} else {
		delete(u.keys, key)
	}
	u.n.Store(int32(len(u.keys)))
}

// take returns the evictions kept and forgets them.
func (u *unreachable) take() map[types.NamespacedName]recordID {
	u.mu.Lock()
	defer u.mu.Unlock()
	keys := u.keys
	u.keys = nil
	u.n.Store(0)
	return keys
}

// RetryUnreachable sends every eviction whose last attempt failed with an error for which
// Options.Unreachable returned true, and that still waits for its retry, back to a worker
// now, and starts its backoff over: the caller has seen that what the Actuator acts through
// (an API server, say) answers again, so these retries need not wait out a backoff that grew
// while it was away. It returns how many it sent back. An eviction is sent back at most once
// per failure of that kind, so calls made as often as one likes cause no more attempts than
// such failures did; evictions that fail for other reasons keep their backoff. An attempt
// under way during the call that then fails as unreachable is retried at once too, as if it
// had failed first. Without Options.Unreachable it does nothing.
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
			r.fails = 0
			e.queue.Schedule(key, id, now)
			n++
		}
		k.unlock()
	}
	return n
}

// noteUnreachable records how the attempt on the eviction id of key ended (err nil for an
// end that is not a failure), for RetryUnreachable, and reports whether it failed as
// unreachable while RetryUnreachable was called (returns is the count of its calls when
// the attempt started): its retry is then due at once.
func (e *Engine[T]) noteUnreachable(key types.NamespacedName, id recordID, err error, returns uint64) bool {
	if e.opts.Unreachable == nil {
		return false
	}
	failed := err != nil && e.opts.Unreachable(err)
	e.unreach.note(key, id, failed)
	return failed && e.unreach.returns.Load() != returns
}
