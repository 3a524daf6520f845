package eviction

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fifo is a queue of keys in arrival order that holds only the latest payload of each key:
// a key queued again keeps its place and takes the new payload, so a burst of updates of
// one object costs one piece of work, done with the newest state.
//
// The keys wait in a ring, so that the slots of the keys taken are reused while more
// arrive: its size is the most keys queued at once, not the number of updates of a busy
// spell. When the fifo empties, a ring of up to 1024 keys is kept with its map for the next
// burst; a larger one is let go with its map, since a Go map never shrinks:
// the storage of an outage's burst is not kept once the burst is over.
type fifo[K comparable, V any] struct {
	ring  []K // queued keys from ring[head] on, wrapping around; len(items) of them
	head  int
	items map[K]V
}

func (f *fifo[K, V]) put(k K, v V) {
	if f.items == nil {
		f.items = make(map[K]V)
	}
	if _, ok := f.items[k]; !ok {
		n := len(f.items)
		if n == len(f.ring) {
			f.grow()
		}
		f.ring[f.slot(n)] = k
	}
	f.items[k] = v
}

func (f *fifo[K, V]) take() (k K, v V, ok bool) {
	if len(f.items) == 0 {
		return k, v, false
	}
	k = f.ring[f.head]
	var zero K
	f.ring[f.head], f.head = zero, f.slot(1)
	v = f.items[k]
	delete(f.items, k)
	if len(f.items) == 0 {
		f.empty()
	}
	return k, v, true
}

// empty lets the storage of a large burst go.
func (f *fifo[K, V]) empty() {
	f.head = 0
	if len(f.ring) > 1024 {
		f.ring, f.items = nil, nil
	}
}

// slot returns the index in the ring of the i-th queued key, counted from 0.
func (f *fifo[K, V]) slot(i int) int {
	i += f.head
	if i >= len(f.ring) {
		i -= len(f.ring)
	}
	return i
}

// grow doubles the ring, with the queued keys in order at its start.
func (f *fifo[K, V]) grow() {
	ring := make([]K, max(2*len(f.ring), 16))
	n := copy(ring, f.ring[f.head:])
	copy(ring[n:], f.ring[:f.head])
	f.ring, f.head = ring, 0
}

func (f *fifo[K, V]) len() int { return len(f.items) }

// nodeEvent is a node's latest state, node nil when it was deleted; or, with resync, a
// request to process its pods again against the taints already known (after a failed
// listing).
type nodeEvent struct {
	node   *v1.Node
	resync bool
}

// shard is the work of one event worker: the nodes hashed onto it, and the pods of those
// nodes. Node work always goes first.
type shard struct {
	mu    sync.Mutex
	nodes fifo[string, nodeEvent]
	pods  fifo[types.NamespacedName, *v1.Pod]
	wake  chan struct{}
	busy  bool            // the worker processes a unit taken from here
	done  bool            // the worker has stopped: Run has returned
	puts  uint64          // updates put so far: WaitIdle's sign that new work came
	idle  []chan struct{} // closed when the shard is next empty and not busy
}

func newShard() *shard { return &shard{wake: make(chan struct{}, 1)} }

func (s *shard) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *shard) putNode(name string, ev nodeEvent) {
	s.mu.Lock()
	if prev, ok := s.nodes.items[name]; ok && ev.resync && !prev.resync {
		ev = prev // a queued update lists the pods anyway, with newer taints
	}
	s.nodes.put(name, ev)
	s.puts++
	s.mu.Unlock()
	s.signal()
}

func (s *shard) putPod(key types.NamespacedName, pod *v1.Pod) {
	s.mu.Lock()
	s.pods.put(key, pod)
	s.puts++
	s.mu.Unlock()
	s.signal()
}

// work is one unit taken from a shard.
type work struct {
	isNode bool
	node   string
	nodeEv nodeEvent
	pod    types.NamespacedName
	podObj *v1.Pod
}

// next takes the next unit of work, nodes first. The worker calls it when it has finished
// the previous one, so when there is none the shard has become idle.
func (s *shard) next() (w work, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name, ev, ok := s.nodes.take(); ok {
		s.busy = true
		return work{isNode: true, node: name, nodeEv: ev}, true
	}
	if key, pod, ok := s.pods.take(); ok {
		s.busy = true
		return work{pod: key, podObj: pod}, true
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
func (s *shard) waitIdle(ctx context.Context) (uint64, error) {
	for {
		s.mu.Lock()
		if !s.busy && s.nodes.len() == 0 && s.pods.len() == 0 {
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
func (s *shard) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy, s.done = false, true
	for _, c := range s.idle {
		close(c)
	}
	s.idle = nil
}

func (s *shard) backlog() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes.len() + s.pods.len()
}

// shardOf hashes a node name onto one of n shards (FNV-1a, as kube does).
func shardOf(node string, n int) int {
	return int(fnv1a(fnvOffset, node) % uint32(n))
}

// fnvOffset starts an FNV-1a hash; fnv1a adds s to h. Written out, unlike hash/fnv, it
// allocates nothing.
const fnvOffset uint32 = 2166136261

func fnv1a(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
