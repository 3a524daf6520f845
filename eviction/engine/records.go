package engine

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
)

// phase is where an open eviction stands between its decisions.
type phase uint8

const (
	// scheduled: waits in the schedule for its deadline, or is due and waits for a worker.
	scheduled phase = iota + 1
	// held: due, and waits for a token or the brake (extra.hold says which).
	held
	// retrying: an attempt failed, and the retry waits in the schedule.
	retrying
)

// closeKind is the closing report an eviction gets: Cancelled or Skipped. (Succeeded comes
// only from an attempt's end.)
type closeKind uint8

const (
	closeCancelled closeKind = iota + 1
	closeSkipped
)

// doneRecord is what the Engine keeps of a target it has acted on, until the Source shows
// the action's effect: the target gone, or no longer bound to the holder it was acted on
// for (an actuator that moves a target keeps its UID).
type doneRecord struct {
	uid    types.UID
	holder string
}

// record is one target's open eviction, from its first scheduling to its closing report:
// the one place where the Engine keeps it. Every change is a named method of Engine
// (schedule, waits, retry, closeRecord, afterAct) made under the target's stripe lock, on the
// record in place (see locked); the schedule (the timed queue) holds only the time at which
// the record wants a worker. Once an eviction has succeeded, the record goes, and only the
// target's UID is kept, as done, until the target's removal is seen.
type record struct {
	uid    types.UID
	holder string // the holder whose taint decides the deadline
	due    int64  // unix nanoseconds of the deadline, as Scheduled last reported it (see dueNanos)
	since  int64  // unix nanoseconds FromObservation's countdown started; 0 otherwise

	attempts int32 // attempts made, counted from 1; the next one is attempts+1
	fails    int16 // consecutive failed attempts since the last scheduling, for the backoff
	phase    phase
	flags    recordFlags
}

// recordID names an open record: its slot, and the slot's generation when it was opened
// (see recordPage.gens). It is the value the schedule keeps for a key's work.
type recordID uint64

func makeID(slot, gen uint32) recordID { return recordID(gen)<<32 | recordID(slot) }

func (id recordID) slot() uint32 { return uint32(id) }
func (id recordID) gen() uint32  { return uint32(id >> 32) }

// recordFlags are a record's yes-or-no state.
type recordFlags uint8

const (
	// running: an act worker runs an attempt now (between Started and its outcome).
	running recordFlags = 1 << iota
	// admitted: it has passed the gate; its retries take no token again.
	admitted
	// hasExtra: its shard keeps an extra for it (a hold, or a closing report owed).
	hasExtra
)

func (r *record) is(f recordFlags) bool { return r.flags&f != 0 }

func (r *record) set(f recordFlags, on bool) {
	if on {
		r.flags |= f
	} else {
		r.flags &^= f
	}
}

// extra is the state only some evictions have, kept beside the records so that a record
// stays small.
type extra struct {
	// hold is the gate's, while the eviction waits for a token or the brake (phase held);
	// its fields are read and written under the gate's lock.
	hold *hold
	// closing is the report owed for an eviction closed while an attempt runs: that
	// attempt's end makes it, unless the attempt succeeds (then Succeeded).
	closing closeKind
	reason  Reason
}

// pageSize is the number of records in a page (4096 of 56 bytes). Pages never move, so that
// a pointer to a record stays good while its slot is taken.
const pageSize = 4096

// recordPage holds the records of pageSize slots and their generations. A slot's
// generation counts the times it was closed, so that an act worker given the id of a
// record that was closed while it waited for the key's lock (the slot may hold another
// key's record by then) sees that the id is stale. Generations are read and written
// atomically: such a worker reads one without the lock of the key that now owns the slot.
type recordPage struct {
	recs [pageSize]record
	gens [pageSize]uint32
}

// records is the Engine's table of evictions. A record lives in a slot of the table's pages;
// the schedule (Engine.queue) is the index from a target's key to its record: the value of
// the key's work is the record's id (see locked.look), and a record is in the schedule for
// as long as it is open, pending or running. A record's fields are guarded by its key's
// stripe lock, which every caller holds, so that a decision finds its record once and
// changes it in place; the table's own locks guard only the free list, the extras and the
// targets done. The zero value is empty and ready.
type records struct {
	// pages is the list of pages, read without a lock. Its entries are set once, under
	// slotMu, before any slot of theirs is handed out; a longer list replaces it when it is
	// full, and the pages themselves never move.
	pages atomic.Pointer[pageList]

	slotMu sync.Mutex
	free   uint32 // the first free slot + 1, 0 for none; a free slot's attempts holds the next
	used   uint32 // slots handed out from the pages, in order

	extraMu sync.Mutex
	extra   map[uint32]*extra // by slot, for the records with hasExtra

	doneMu sync.Mutex
	done   map[types.NamespacedName]doneRecord
	ndone  atomic.Int32 // len(done), read without the lock: most decisions find none
	// donePeak is the most entries done has held since it was last rebuilt.
	donePeak int
}

// pageList is a list of pages, with room for more: entries past the pages made so far are
// nil.
type pageList []*recordPage

// page returns the page of slot i and i's place in it.
func (rs *records) page(i uint32) (*recordPage, uint32) {
	return (*rs.pages.Load())[i/pageSize], i % pageSize
}

// at returns the record in slot i, which must have been handed out.
func (rs *records) at(i uint32) *record {
	p, j := rs.page(i)
	return &p.recs[j]
}

// live returns the record id names when it is still open: its slot has not been closed
// since the id was made.
func (rs *records) live(id recordID) (*record, bool) {
	p, j := rs.page(id.slot())
	return &p.recs[j], atomic.LoadUint32(&p.gens[j]) == id.gen()
}

// addPage adds a page for the slots from rs.used on. rs.slotMu must be held.
func (rs *records) addPage() {
	n := int(rs.used / pageSize)
	list := rs.pages.Load()
	if list == nil || n == len(*list) {
		longer := make(pageList, max(16, 2*n)) // 16 pages hold 65,536 records
		if list != nil {
			copy(longer, *list)
		}
		list = &longer
		rs.pages.Store(list)
	}
	(*list)[n] = new(recordPage)
}

// open puts r in a free slot and returns its id and the record in it.
func (rs *records) open(r record) (recordID, *record) {
	rs.slotMu.Lock()
	defer rs.slotMu.Unlock()
	var i uint32
	if rs.free != 0 {
		i = rs.free - 1
		rs.free = uint32(rs.at(i).attempts)
	} else {
		if rs.used%pageSize == 0 {
			rs.addPage()
		}
		i = rs.used
		rs.used++
	}
	p, j := rs.page(i)
	p.recs[j] = r
	return makeID(i, atomic.LoadUint32(&p.gens[j])), &p.recs[j]
}

// close frees slot i and its extra. The slot's generation moves on, so that ids of the
// record closed are stale from now on.
func (rs *records) close(i uint32) {
	p, j := rs.page(i)
	if p.recs[j].is(hasExtra) {
		rs.extraMu.Lock()
		delete(rs.extra, i)
		rs.extraMu.Unlock()
	}
	atomic.AddUint32(&p.gens[j], 1)
	rs.slotMu.Lock()
	defer rs.slotMu.Unlock()
	p.recs[j] = record{attempts: int32(rs.free)}
	rs.free = i + 1
}

// extraOf returns the extra of the record r in slot i, making one if make_ is true and it
// has none; nil when it has none and make_ is false.
func (rs *records) extraOf(i uint32, r *record, make_ bool) *extra {
	if !r.is(hasExtra) && !make_ {
		return nil
	}
	rs.extraMu.Lock()
	defer rs.extraMu.Unlock()
	x := rs.extra[i]
	if x == nil && make_ {
		if rs.extra == nil {
			rs.extra = make(map[uint32]*extra)
		}
		x = &extra{}
		rs.extra[i] = x
		r.set(hasExtra, true)
	}
	return x
}

// dropExtra forgets the extra of the record r in slot i.
func (rs *records) dropExtra(i uint32, r *record) {
	if !r.is(hasExtra) {
		return
	}
	rs.extraMu.Lock()
	delete(rs.extra, i)
	rs.extraMu.Unlock()
	r.set(hasExtra, false)
}

// settleDone decides about the target key that was acted on, if it was: it returns true
// when the Source has not caught up with the action yet (exists, with the same UID, still
// bound to the holder it was acted on for), and otherwise forgets it: the action took
// effect, or another target took the key. One look, under one lock.
func (rs *records) settleDone(key types.NamespacedName, exists bool, uid types.UID, bindings []Binding) bool {
	if rs.ndone.Load() == 0 {
		return false
	}
	rs.doneMu.Lock()
	defer rs.doneMu.Unlock()
	d, ok := rs.done[key]
	switch {
	case !ok:
		return false
	case exists && d.uid == uid && boundTo(bindings, d.holder):
		return true
	}
	delete(rs.done, key)
	// A Go map never gives memory back: after a zone outage the UIDs of tens of thousands
	// of evicted targets would otherwise stay allocated.
	if rs.donePeak > 1024 && len(rs.done) < rs.donePeak/4 {
		fresh := make(map[types.NamespacedName]doneRecord, len(rs.done))
		for k, v := range rs.done {
			fresh[k] = v
		}
		rs.done, rs.donePeak = fresh, len(fresh)
	}
	rs.ndone.Store(int32(len(rs.done)))
	return false
}

// setDone records that the target key was acted on, as d says.
func (rs *records) setDone(key types.NamespacedName, d doneRecord) {
	rs.doneMu.Lock()
	defer rs.doneMu.Unlock()
	if rs.done == nil {
		rs.done = make(map[types.NamespacedName]doneRecord)
	}
	rs.done[key] = d
	rs.donePeak = max(rs.donePeak, len(rs.done))
	rs.ndone.Store(int32(len(rs.done)))
}
