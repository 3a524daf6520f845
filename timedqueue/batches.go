package timedqueue

// batch is a worker's claims: claims[:n] are this round's, started in order.
type batch[K comparable, V any] struct {
	claims [maxBatch]claim[K, V]
	n      int
}

// batches holds one batch per worker. A slot does not record its claim: the scans below,
// over at most maxBatch claims per worker, are cheaper than 4 bytes in every slot, and they
// are made only for keys that run, for a renumbering and for the rebuild of the slots after
// a large drain. Every method needs q.mu held.
type batches[K comparable, V any] []batch[K, V]

// find returns the batch and the place in it of the claim, claimed, started or done, of
// slot idx, or nil.
func (bs batches[K, V]) find(idx int32) (*batch[K, V], int) {
	for w := range bs {
		b := &bs[w]
		for i := range b.n {
			if c := &b.claims[i]; c.slot == idx {
				if st := c.state.Load(); st == claimed || st == started || st == done {
					return b, i
				}
			}
		}
	}
	return nil, 0
}

// each calls f with every claim that still names a slot: claimed, started, or done and not
// yet finished.
func (bs batches[K, V]) each(f func(c *claim[K, V])) {
	for w := range bs {
		b := &bs[w]
		for i := range b.n {
			if c := &b.claims[i]; c.slot >= 0 {
				f(c)
			}
		}
	}
}

// remap moves the claims to the slots' new places: slot i is now slot to[i].
func (bs batches[K, V]) remap(to []int32) {
	for w := range bs {
		b := &bs[w]
		for i := range b.n {
			if c := &b.claims[i]; c.slot >= 0 {
				c.slot = to[c.slot]
				c.it.slot = c.slot
			}
		}
	}
}
