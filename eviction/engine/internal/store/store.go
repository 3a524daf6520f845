package store

import (
	"hash/maphash"
	"iter"

	"k8s.io/apimachinery/pkg/types"
)

// stripeCount is the number of stripes, each with its lock, index and entries: a power of
// two well above the number of goroutines that decide at once (event and act workers), so
// that unrelated keys seldom wait for each other.
const stripeCount = 256

// ID names one entry: its stripe, its slot there, and the slot's generation when the entry
// was made. A slot reused for another entry has another generation, so an ID never names
// the entry that came after its own; the zero ID names none.
type ID uint64

func makeID(stripe, slot int, gen uint32) ID {
	return ID(gen)<<32 | ID(stripe)<<24 | ID(slot)
}

func (id ID) stripe() int { return int(id >> 24 & (stripeCount - 1)) }
func (id ID) slot() int   { return int(id & slotMask) }
func (id ID) gen() uint32 { return uint32(id >> 32) }
func (id ID) valid() bool { return id.gen() != 0 }

// StripeID returns the ID that names stripe s itself, and no entry (its generation is 0):
// an owner that keeps IDs in a schedule can put the stripe's compaction there too.
func StripeID(s int) ID { return makeID(s, 0, 0) }

// Stripe returns the stripe id names, when id is a StripeID.
func (id ID) Stripe() (int, bool) { return id.stripe(), !id.valid() && id.slot() == 0 }

// maxSlots is the most entries a stripe holds: slot numbers have 24 bits.
func maxSlots() int { return 1 << 24 }

// stripeOf returns the stripe of a key whose hash is h: its top bits, which the index's
// home buckets (low bits) and tags (bits 48 to 55) do not use.
func stripeOf(h uint64) int { return int(h >> 56) }

// Store holds at most one entry of type E per key, and the locks that order what is done to
// each key: everything about a key happens under its stripe's lock (see [Store.Lock]). Each
// stripe also owns a scratch space of type S that whoever holds the lock may use, so that a
// decision allocates nothing. It is safe for concurrent use; the zero Store is not usable:
// make one with New.
//
// The keys live in the entries, and the stripes' indexes hold only slot numbers: a key
// costs its entry and about 6 bytes of index, with no per-entry allocation and nothing for
// the collector to scan but the entries themselves.
type Store[E, S any] struct {
	seed    maphash.Seed
	stripes [stripeCount]stripe[E, S]
}

// Mover moves the entries of a stripe that has thinned out into smaller storage, for the
// owner of the entries, who updates whatever names them by ID. Thinned says that the
// stripe has thinned out: the owner calls [Store.Compact] with it a while later (not at
// once: a burst of drops would compact again and again). CanMove reports whether an entry
// may move at all (false for one that something names without the stripe's lock); Moved
// tells that the entry named from is now named to, at e. All three are called with the
// stripe's lock held, and must not take a lock of the Store.
type Mover[E any] interface {
	Thinned(stripe int)
	CanMove(e *E) bool
	Moved(from, to ID, e *E)
}

// New returns an empty Store, each stripe's scratch space set up by scratch (nil: the zero
// S); mover (nil: none) is told when a thinned-out stripe moves its entries, which it does
// only with a mover, or when it has emptied.
func New[E, S any](scratch func(*S), mover Mover[E]) *Store[E, S] {
	s := &Store[E, S]{seed: maphash.MakeSeed()}
	for i := range s.stripes {
		st := &s.stripes[i]
		st.lock = make(chan struct{}, 1)
		st.num, st.seed, st.mover = i, s.seed, mover
		if scratch != nil {
			scratch(&st.scratch)
		}
	}
	return s
}

// Locked is a held stripe lock, taken for one key: it finds, makes and drops that key's
// entry. Use it as
//
//	k := s.Lock(key)
//	defer k.Unlock()
//
// A Locked must not be used after Unlock, nor the entry pointers it returned.
type Locked[E, S any] struct {
	st   *stripe[E, S]
	key  types.NamespacedName
	hash uint64
}

// Lock takes the lock of key's stripe and returns it. It blocks while another goroutine
// holds that stripe's lock.
func (s *Store[E, S]) Lock(key types.NamespacedName) Locked[E, S] {
	h := maphash.Comparable(s.seed, key)
	st := &s.stripes[stripeOf(h)]
	st.lock <- struct{}{}
	return Locked[E, S]{st: st, key: key, hash: h}
}

// LockID takes the lock of the stripe of the entry id and returns it with that entry, or
// with a nil entry when id names none any more (the entry was dropped, and its slot may
// hold another). It blocks as Lock does.
func (s *Store[E, S]) LockID(id ID) (Locked[E, S], *E) {
	st := &s.stripes[id.stripe()]
	st.lock <- struct{}{}
	n := st.live(id)
	if n == nil {
		return Locked[E, S]{st: st}, nil
	}
	return Locked[E, S]{st: st, key: n.key, hash: maphash.Comparable(s.seed, n.key)}, &n.val
}

// Key returns the key the lock was taken for; the zero key for a LockID whose entry was
// gone.
func (k Locked[E, S]) Key() types.NamespacedName { return k.key }

// Scratch returns the stripe's scratch space, for the holder of the lock alone.
func (k Locked[E, S]) Scratch() *S { return &k.st.scratch }

// Get returns the key's entry and its ID, or nil when it has none.
func (k Locked[E, S]) Get() (*E, ID) {
	if n, id := k.st.find(k.key, k.hash); n != nil {
		return &n.val, id
	}
	return nil, 0
}

// Put returns the key's entry and its ID, making a zero one when it has none.
func (k Locked[E, S]) Put() (*E, ID) {
	if n, id := k.st.find(k.key, k.hash); n != nil {
		return &n.val, id
	}
	n, id := k.st.add(k.key, k.hash)
	return &n.val, id
}

// Drop removes the key's entry, which id names; a stale id drops nothing. Its ID is stale
// from then on. When the stripe has thinned out, Drop may move its other entries (see
// [Mover]): a pointer to an entry of the stripe got before Drop must not be used after.
func (k Locked[E, S]) Drop(id ID) {
	if id.valid() && k.st.live(id) != nil {
		k.st.remove(id.slot(), k.hash)
	}
}

// Unlock releases the stripe's lock.
func (k Locked[E, S]) Unlock() { <-k.st.lock }

// Compact moves the entries of the stripe that the Mover was told has thinned out into
// storage of their size, if it still has thinned out and every entry may move; it reports
// false when it could not, and the Mover is then told again, at once, that it has thinned
// out, so that it tries later. It takes the stripe's lock.
func (s *Store[E, S]) Compact(stripe int) bool {
	st := &s.stripes[stripe]
	st.lock <- struct{}{}
	defer func() { <-st.lock }()
	st.thin = false
	if !st.thinnedOut() {
		return true
	}
	if st.compact() {
		return true
	}
	st.thin = true
	st.mover.Thinned(st.num)
	return false
}

// All returns every entry with its key and ID, one stripe at a time, each under its
// stripe's lock: the loop's body runs with that lock held, so it must not take a lock of
// this Store. It sees each entry that exists throughout the loop once; one made or
// dropped meanwhile may be seen or not.
func (s *Store[E, S]) All() iter.Seq2[types.NamespacedName, *E] {
	return func(yield func(types.NamespacedName, *E) bool) {
		for i := range s.stripes {
			st := &s.stripes[i]
			st.lock <- struct{}{}
			ok := st.each(yield)
			<-st.lock
			if !ok {
				return
			}
		}
	}
}
