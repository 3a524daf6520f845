package engine

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// holderEvent is a holder's latest state, deleted when it was deleted; or, with resync, a
// request to decide again about its targets against the taints already known (after a
// failed listing).
type holderEvent struct {
	holder  Holder
	deleted bool
	resync  bool
}

// targetEvent is the latest update of a target: the object it carried (the decision's
// fallback when the Source fails), or deleted; or, with retryOnly, a request to decide
// again from the Source, on the shard of holder, after a lookup failed with no update to
// fall back on.
type targetEvent[T any] struct {
	obj       T
	deleted   bool
	retryOnly bool
	holder    string
}

// shard is the work of one event worker: the holders hashed onto it, and the targets
// located on those holders. Holder work always goes first.
type shard[T any] struct {
	mu      sync.Mutex
	holders fifo[string, holderEvent]
	targets fifo[types.NamespacedName, targetEvent[T]]
	wake    chan struct{}
	busy    bool            // the worker processes a unit taken from here
	done    bool            // the worker has stopped: Run has returned
	puts    uint64          // updates put so far: WaitIdle's sign that new work came
	idle    []chan struct{} // closed when the shard is next empty and not busy
}

func newShard[T any]() *shard[T] { return &shard[T]{wake: make(chan struct{}, 1)} }

func (s *shard[T]) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *shard[T]) putHolder(name string, ev holderEvent) {
	s.mu.Lock()
	if prev, ok := s.holders.items[name]; ok && ev.resync && !prev.resync {
		ev = prev // a queued update lists the targets anyway, with newer taints
	}
	s.holders.put(name, ev)
	s.puts++
	s.mu.Unlock()
	s.signal()
}

func (s *shard[T]) putTarget(key types.NamespacedName, ev targetEvent[T]) {
	s.mu.Lock()
	if prev, ok := s.targets.items[key]; ok && ev.retryOnly && !prev.retryOnly {
		ev = prev // a queued update decides anyway, with an object to fall back on
	}
	s.targets.put(key, ev)
	s.puts++
	s.mu.Unlock()
	s.signal()
}

// work is one unit taken from a shard: a holder's update, or else a target's.
type work[T any] struct {
	isHolder bool
	holder   string
	holderEv holderEvent
	target   types.NamespacedName
	targetEv targetEvent[T]
}

// next takes the next unit of work, holders first. The worker calls it when it has finished
// the previous one, so when there is none the shard has become idle.
func (s *shard[T]) next() (w work[T], ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name, ev, ok := s.holders.take(); ok {
		s.busy = true
		return work[T]{isHolder: true, holder: name, holderEv: ev}, true
	}
	if key, ev, ok := s.targets.take(); ok {
		s.busy = true
		return work[T]{target: key, targetEv: ev}, true
	}
	s.busy = false
	for _, c := range s.idle {
		close(c)
	}
	s.idle = nil
	return w, false
}

// waitIdle waits until the shard is empty and its worker is not processing a unit, and
// returns how many updates had been put by then; or ctx's error, or ErrStopped when the
// worker has stopped with updates left.
func (s *shard[T]) waitIdle(ctx context.Context) (uint64, error) {
	for {
		s.mu.Lock()
		if !s.busy && s.holders.len() == 0 && s.targets.len() == 0 {
			puts := s.puts
			s.mu.Unlock()
			return puts, nil
		}
		if s.done {
			s.mu.Unlock()
			return 0, ErrStopped
		}
		c := make(chan struct{})
		s.idle = append(s.idle, c)
		s.mu.Unlock()
		select {
		case <-c:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// stop records that the worker has stopped, and wakes the callers of waitIdle.
func (s *shard[T]) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy, s.done = false, true
	for _, c := range s.idle {
		close(c)
	}
	s.idle = nil
}

func (s *shard[T]) backlog() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holders.len() + s.targets.len()
}

// shardOf returns the event worker, of n, that processes the updates of the holder name and
// of the targets located on it (FNV-1a, as kube hashes node names onto its workers).
func shardOf(name string, n int) int {
	return int(fnv1a(fnvOffset, name) % uint32(n))
}
