package intake

// fifo is a queue of keys in arrival order with the latest payload of each: a key put again
// while it waits keeps its place. The waiting keys move to the front of the slice once as
// many were taken, so a busy spell allocates nothing once grown. It lets its storage go
// when it empties after more than 1024 keys waited at once (a Go map never shrinks).
type fifo[K comparable, V any] struct {
	keys  []K // waiting from keys[head] on
	head  int
	items map[K]V
	most  int // the most keys waiting at once since the storage was made
}

func (f *fifo[K, V]) put(k K, v V) {
	if f.items == nil {
		f.items = make(map[K]V)
	}
	if _, waiting := f.items[k]; !waiting {
		f.keys = append(f.keys, k)
	}
	f.items[k] = v
	f.most = max(f.most, len(f.items))
}

func (f *fifo[K, V]) take() (k K, v V, ok bool) {
	if len(f.items) == 0 {
		return k, v, false
	}
	k = f.keys[f.head]
	v = f.items[k]
	delete(f.items, k)
	if f.head++; 2*f.head >= len(f.keys) {
		n := copy(f.keys, f.keys[f.head:])
		clear(f.keys[n:])
		f.keys, f.head = f.keys[:n], 0
	}
	if len(f.items) == 0 && f.most > 1024 {
		*f = fifo[K, V]{}
	}
	return k, v, true
}
