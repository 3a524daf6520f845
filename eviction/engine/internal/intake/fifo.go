package intake

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
