package intake

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// shard is the work of one event worker: the holders hashed onto it, and the targets
// located on those holders. Holder work always goes first. Its lock guards all of its
// fields; nothing else is locked while it is held.
type shard[H, T any] struct {
	mu      sync.Mutex
	holders fifo[string, H]
	targets fifo[types.NamespacedName, T]
	wake    chan struct{}
	busy    bool            // the worker processes a unit taken from here
	done    bool            // the worker has stopped: Run has returned
	puts    uint64          // updates put so far: WaitIdle's sign that new work came
	idle    []chan struct{} // closed when the shard is next empty and not busy
}

func newShard[H, T any]() *shard[H, T] { return &shard[H, T]{wake: make(chan struct{}, 1)} }

func (s *shard[H, T]) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// putHolder queues ev for the holder name; keep chooses what to keep when one is queued
// already (nil: the newer).
func (s *shard[H, T]) putHolder(name string, ev H, keep func(queued, next H) H) {
	s.mu.Lock()
	if prev, ok := s.holders.items[name]; ok && keep != nil {
		ev = keep(prev, ev)
	}
	s.holders.put(name, ev)
	s.puts++
	s.mu.Unlock()
	s.signal()
}

func (s *shard[H, T]) putTarget(key types.NamespacedName, ev T) {
	s.mu.Lock()
	s.targets.put(key, ev)
	s.puts++
	s.mu.Unlock()
	s.signal()
}

// unit is one piece of a shard's work: a holder's update, or else a target's.
type unit[H, T any] struct {
	isHolder bool
	holder   string
	holderEv H
	target   types.NamespacedName
	targetEv T
}

// next takes the next unit of work, holders first. The worker calls it when it has finished
// the previous one, so when there is none the shard has become idle.
func (s *shard[H, T]) next() (u unit[H, T], ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name, ev, ok := s.holders.take(); ok {
		s.busy = true
		return unit[H, T]{isHolder: true, holder: name, holderEv: ev}, true
	}
	if key, ev, ok := s.targets.take(); ok {
		s.busy = true
		return unit[H, T]{target: key, targetEv: ev}, true
	}
	s.busy = false
	for _, c := range s.idle {
		close(c)
	}
	s.idle = nil
	return u, false
}

// waitIdle waits until the shard is empty and its worker is not processing a unit, and
// returns how many updates had been put by then; or ctx's error, or ErrStopped when the
// worker has stopped with updates left.
func (s *shard[H, T]) waitIdle(ctx context.Context) (uint64, error) {
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
func (s *shard[H, T]) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy, s.done = false, true
	for _, c := range s.idle {
		close(c)
	}
	s.idle = nil
}

func (s *shard[H, T]) backlog() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holders.len() + s.targets.len()
}
