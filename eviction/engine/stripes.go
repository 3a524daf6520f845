package engine

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/timedqueue"
)

// stripeCount is the number of key locks; a power of two well above the worker count keeps
// unrelated targets from waiting on each other.
const stripeCount = 256

// stripe is one of the locks that serialise the decisions about a target: each decision
// reads the target's state from the Source and changes its record while holding the lock of
// the target's stripe, so that two workers (a holder's and a target's, or an act worker)
// deciding about the same target never interleave, and the last decision is made from the
// newest state. The lock is a channel of capacity one rather than a mutex so that a
// goroutine waiting for it counts as blocked to testing/synctest.
//
// A stripe also owns the scratch space its decisions use, so that a decision allocates
// nothing: whoever holds the lock may use it, and must not keep it.
type stripe struct {
	lock   chan struct{}
	seen   seen
	causes []cause
}

// stripes are an Engine's key locks. Make them with newStripes.
type stripes [stripeCount]stripe

func newStripes() *stripes {
	var s stripes
	// Room for two bindings in each stripe's scratch space, made at once: most targets have
	// one or two, and a decision then allocates nothing, not even the first time.
	const room = 2
	bindings := make([]Binding, stripeCount*room)
	taints := make([][]v1.Taint, stripeCount*room)
	groups := make([]string, stripeCount*room)
	for i := range s {
		s[i].lock = make(chan struct{}, 1)
		lo, hi := i*room, (i+1)*room
		s[i].seen.t.Bindings = bindings[lo:lo:hi]
		s[i].seen.taints = taints[lo:lo:hi]
		s[i].seen.groups = groups[lo:lo:hi]
	}
	return &s
}

// keyHash hashes a target's key (FNV-1a over "namespace/name"), for its stripe.
func keyHash(key types.NamespacedName) uint32 {
	return fnv1a(fnv1a(fnv1a(fnvOffset, key.Namespace), "/"), key.Name)
}

// schedule is the Engine's timed queue: when each open record wants a worker, and, as the
// value of a key's work, its record's slot.
type schedule = timedqueue.Queue[types.NamespacedName, recordID]

// locked is a held stripe lock and the key it was taken for: it finds, opens and closes
// that key's record. Use it as
//
//	k := e.lock(key)
//	defer k.unlock()
type locked struct {
	key    types.NamespacedName
	stripe *stripe
	recs   *records
	queue  *schedule
}

// lock takes the lock of key's stripe.
func (s *stripes) lock(key types.NamespacedName, recs *records, q *schedule) locked {
	st := &s[keyHash(key)%stripeCount]
	st.lock <- struct{}{}
	return locked{key: key, stripe: st, recs: recs, queue: q}
}

// unlock empties the scratch space and releases the lock. What the scratch space pointed
// to (a few objects of the Source a stripe, until its next decision) is left in place:
// clearing it costs every decision writes, with the collector's barriers, to save nothing.
func (k locked) unlock() {
	k.stripe.seen.reset()
	<-k.stripe.lock
}

// entry is a key's open record, in place, and its slot, as a decision holds it under the
// key's lock. The zero entry stands for none.
type entry struct {
	*record
	id recordID
}

// current returns the key's open record, found through the schedule, which holds every
// open record; the zero entry when it has none.
func (k locked) current() entry {
	if id, ok := k.queue.Value(k.key); ok {
		return entry{k.recs.at(id.slot()), id}
	}
	return entry{}
}

// open puts r in a free slot of the key's shard and returns it. It is open once the
// schedule holds its id (see Engine.schedule).
func (k locked) open(r record) entry {
	i, p := k.recs.open(r)
	return entry{p, i}
}

// close frees the slot of the key's record r; the schedule must no longer hold it, and r
// must not be used after.
func (k locked) close(r entry) { k.recs.close(r.id.slot()) }

// extra returns the extra of the key's record r; one is made when make_ is true.
func (k locked) extra(r entry, make_ bool) *extra {
	return k.recs.extraOf(r.id.slot(), r.record, make_)
}

// dropExtra forgets the extra of the key's record r.
func (k locked) dropExtra(r entry) { k.recs.dropExtra(r.id.slot(), r.record) }

// byID returns the record id names if it is still open; the caller knows it is the key's
// (an act worker is given the key and its id together).
func (k locked) byID(id recordID) entry {
	if r, ok := k.recs.live(id); ok {
		return entry{r, id}
	}
	return entry{}
}

// setDone records that the key's target was acted on, as d says.
func (k locked) setDone(d doneRecord) { k.recs.setDone(k.key, d) }

// seen is a target as one decision sees it: described by the Source, with the started
// NoExecute taints (and, for a recheck, the groups) of the holders of its bindings.
type seen struct {
	exists bool
	t      Target
	taints [][]v1.Taint // taints[i]: those of t.Bindings[i].Holder
	groups []string     // groups[i]: that holder's group; filled by the recheck only
	// gone is a holder that is known to be deleted: the one whose deletion is being
	// processed, or, in a recheck, the record's holder when the Source no longer has it.
	gone string
}

// reset empties s, keeping its storage.
func (s *seen) reset() {
	s.t.Leaving = ""
	s.t.Bindings = s.t.Bindings[:0]
	s.taints, s.groups = s.taints[:0], s.groups[:0]
	s.exists, s.gone = false, ""
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
