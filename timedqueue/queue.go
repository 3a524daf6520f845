package timedqueue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// WorkFunc is the work a [Queue] runs when a key is due. ctx is the one passed to
// [Queue.Run]: it is cancelled when Run is stopping, and the work should then return soon.
// A non-nil error, or a panic, fails the attempt and schedules a retry (see [Backoff]).
type WorkFunc[K comparable, V any] func(ctx context.Context, key K, value V) error

// PanicError is the error a failed attempt reports when the work function panicked. The
// queue recovers the panic so that one bad callback cannot take the process down, counts the
// attempt as failed and retries it like any other failure.
type PanicError struct {
	// Value is what the work function passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

// Error returns "timedqueue: work panicked: VALUE".
func (e *PanicError) Error() string { return fmt.Sprintf("timedqueue: work panicked: %v", e.Value) }

// ErrRunTwice is returned by [Queue.Run] when the queue has already been run.
var ErrRunTwice = errors.New("timedqueue: Run called more than once")

// Queue runs work for keys at the times they are scheduled for, on a bounded pool of
// workers, with retries. It holds one entry per key: scheduling a key again moves or
// replaces its work, and Cancel removes it.
//
// Due work is taken in deadline order, ties in the order they were scheduled (see the
// package doc for what that means with several workers). The same key never runs twice at
// once; a Schedule or Cancel that comes while the key runs takes effect for the next
// attempt and is not undone when the running one ends. It keeps one timer and Workers
// goroutines, never a goroutine or a timer per key, and no allocation per pending key.
//
// All methods are safe for concurrent use, and none of them blocks on running work, but
// Queue.WaitIdle, which waits for it on purpose: a Schedule or Cancel waits at most for a
// short hold of the queue's lock. The zero Queue is not usable: create one with New.
type Queue[K comparable, V any] struct {
	work    WorkFunc[K, V]
	clock   clock.Clock
	loc     *time.Location // of the clock's times, for the times the queue returns
	backoff Backoff
	kick    chan struct{}

	// mu guards everything below. How long it is held: a worker takes due work in batches,
	// up to 32 items per hold, and starts them one after another; an item of a batch that
	// has not started yet is taken back by Cancel or Schedule of its key, and by a worker
	// that has nothing else to do. When a quarter or more of the work falls due at once (a
	// zone going down), the worker that sees it first takes the due work out of the heap in
	// one pass under the lock (ready.go), sorting it when it was not scheduled in deadline
	// order (up to 65,536 items; more are popped one by one, as smaller bursts are), and the
	// workers then hand it out at no cost per item; a Schedule or Cancel during the pass
	// waits for it. Once in about four billion Schedule and Cancel calls, one of them also
	// renumbers the pending work, a sort of all of it (seq.go). The holds are measured in
	// BENCHMARKS.md ("Holds of the lock").
	mu    sync.Mutex
	cond  sync.Cond // workers wait here for due work
	index index[K, V]
	slots slotTable[K, V]
	free  []int32
	heap  itemHeap
	ready []item // due items taken out of the heap in one pass (ready.go)
	// extractBelow, when not 0, is the heap length under which such a pass is tried
	// again, after a pass found too many due items out of order to sort under the lock.
	extractBelow int
	dead         int // stale items in heap and ready
	// seq is the last number nextSeq gave; renumbering starts when it reaches seqLimit,
	// which only tests lower.
	seq, seqLimit uint32
	batches       batches[K, V] // one per worker there may be
	workers       workerSet     // the workers running, and how many may (workers.go)
	active        int           // keys running (claimed or started)
	sleepers      atomic.Int32  // workers waiting in cond; read without the lock too
	lastClaim     int64         // the clock when a worker last claimed work
	started       bool
	running       chan struct{} // closed when Run starts
	closed        bool

	// The dispatcher's plan: each time it looks at the heap it makes a plan (counted in
	// plans) and sets armed to the deadline its timer is set for (maxNanos: none; at or
	// before now: none needed, the workers were woken). armedPlan is the last plan whose
	// timer is set; while it is behind plans, the dispatcher is setting its timer.
	armed     int64
	plans     uint64
	armedPlan uint64
	idle      chan struct{} // closed on the next change, for WaitIdle; nil when none waits
}

// New returns a Queue that calls work for each key when it is due, once [Queue.Run] runs.
// It returns an error, and no queue, when work is nil or an option is out of range.
func New[K comparable, V any](work WorkFunc[K, V], opts Options) (*Queue[K, V], error) {
	if work == nil {
		return nil, errors.New("timedqueue: nil work function")
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("timedqueue: Workers is %d, must not be negative", opts.Workers)
	}
	b, err := opts.Backoff.normalize()
	if err != nil {
		return nil, err
	}
	workers := opts.Workers
	if workers == 0 {
		workers = DefaultWorkers
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	q := &Queue[K, V]{
		work:     work,
		clock:    clk,
		loc:      clk.Now().Location(),
		backoff:  b,
		kick:     make(chan struct{}, 1),
		batches:  make(batches[K, V], workers),
		workers:  workerSet{limit: workers, alive: make([]bool, workers)},
		armed:    maxNanos,
		seqLimit: math.MaxUint32,
		running:  make(chan struct{}),
	}
	q.workers.current.Store(int32(workers))
	q.index = newIndex(&q.slots, 0)
	q.cond.L = &q.mu
	return q, nil
}

// Schedule schedules work for key at time at, with value, replacing any work pending for
// key. It never blocks on running work.
//
//   - When key is pending at the same time already, only its value is replaced: its place in
//     the order and its retry state stay.
//   - When key is pending at another time, it moves there, earlier or later, and its retry
//     state is reset.
//   - When key is running (its work has started; work claimed by a worker but not started
//     counts as pending), the new work runs after the running attempt returns, whatever
//     that attempt's outcome; the running attempt is then not retried. Scheduling a running
//     key for the time it runs for only replaces the value its retries will use.
//
// Schedule reports whether it scheduled or moved work, false when it only replaced a value.
//
// A time at or before now (the zero time included) runs as soon as a worker is free. Times
// are kept in nanoseconds between the years 1678 and 2262; later ones are clamped to 2262.
func (q *Queue[K, V]) Schedule(key K, value V, at time.Time) bool {
	return q.schedule(key, value, at, false)
}

// ScheduleEarlier schedules work for key at time at, with value, as Schedule does, unless
// work is pending for key at or before at already: then it leaves that work as it is and
// returns false. Callers that schedule a key from several places, some without a lock
// that orders them, use it so that a wake-up one of them asked for is never pushed later
// by another.
func (q *Queue[K, V]) ScheduleEarlier(key K, value V, at time.Time) bool {
	return q.schedule(key, value, at, true)
}

func (q *Queue[K, V]) schedule(key K, value V, at time.Time, earlierOnly bool) bool {
	t := toNanos(at)
	q.mu.Lock()
	if earlierOnly {
		if idx, ok := q.index.get(key); ok {
			if s := q.slots.at(idx); s.isPending() && s.due <= t {
				q.mu.Unlock()
				return false
			}
		}
	}
	seq := q.nextSeq() // first: it may renumber the pending work
	idx, ok, same := q.unchangedLocked(key, value, t)
	if same {
		q.mu.Unlock()
		return false
	}
	if ok {
		if s := q.slots.at(idx); s.hasItem() {
			q.dead++ // its heap item goes stale
		}
	} else {
		idx = q.alloc(key)
	}
	s := q.slots.at(idx)
	s.gen = seq
	s.value, s.due = value, t
	s.markScheduled()
	q.heap.push(item{at: t, seq: seq, slot: idx})
	kick := t < q.armed
	q.compactHeap()
	q.changed()
	q.mu.Unlock()
	if kick {
		q.wake()
	}
	return true
}

// unchangedLocked looks key up and reports whether scheduling it at t would change nothing
// but its value: it is pending for t already, or running for t with nothing newer pending.
// Then it takes value. q.mu must be held.
func (q *Queue[K, V]) unchangedLocked(key K, value V, t int64) (idx int32, ok, same bool) {
	idx, ok = q.index.get(key)
	if !ok {
		return idx, false, false
	}
	s := q.slots.at(idx)
	if s.isRunning() {
		q.unclaim(idx) // a claim not started yet must not start with what is replaced
	}
	same = s.isPending() && s.due == t
	if s.isRunningOnly() {
		if c := q.claimOf(idx); c != nil {
			same = s.gen == c.it.seq && c.due == t
		}
	}
	if same {
		s.value = value
	}
	return idx, true, same
}

// Cancel removes the pending work of key, waiting or due or waiting to retry, and reports
// whether there was any. Due work that a worker has claimed but not started yet counts as
// pending: it is removed and never starts. It does not interrupt or wait for an attempt
// that is running (as [time.Timer.Stop] does not wait for its function), but that attempt
// is not retried if it fails.
func (q *Queue[K, V]) Cancel(key K) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	idx, ok := q.index.get(key)
	if !ok {
		return false
	}
	seq := q.nextSeq() // before any count of stale items: it may renumber them away
	s := q.slots.at(idx)
	if s.isRunning() {
		q.unclaim(idx) // a claim not started yet must not start after Cancel returns
	}
	removed := s.isPending()
	if s.hasItem() {
		q.dead++
	}
	s.gen = seq
	s.markCancelled()
	if !s.isRunning() {
		q.release(idx)
	}
	q.compactHeap()
	q.changed()
	return removed
}

// Get returns the value and the time key is scheduled for, and true, when key has work
// pending: waiting, due, or waiting to retry (then the time is still the one it was
// scheduled for). It returns false when key has no pending work, even if an attempt of it
// is running. The time is in the location of the clock's times.
func (q *Queue[K, V]) Get(key K) (value V, at time.Time, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	idx, ok := q.index.get(key)
	if !ok || !q.slots.at(idx).isPending() {
		return value, time.Time{}, false
	}
	s := q.slots.at(idx)
	return s.value, q.timeOf(s.due), true
}

// Running returns the value and the time of the attempt of key that a worker has taken,
// started or not, and true; false when no attempt of key is running, or when a Schedule or
// Cancel since has replaced the work it runs (the attempt then runs to its end, but stands
// for nothing pending). It tells a caller that finds no pending work for key (Get returns
// false) whether a worker is about to do or doing what it would schedule. The time is in
// the location of the clock's times.
func (q *Queue[K, V]) Running(key K) (value V, at time.Time, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	idx, ok := q.index.get(key)
	if !ok || !q.slots.at(idx).isRunning() {
		return value, time.Time{}, false
	}
	c := q.claimOf(idx)
	if c == nil || c.it.seq != q.slots.at(idx).gen {
		return value, time.Time{}, false
	}
	return c.a.value, q.timeOf(c.due), true
}

// timeOf turns a deadline back into a time in the location of the clock's times.
func (q *Queue[K, V]) timeOf(n int64) time.Time {
	if n == zeroNanos {
		return time.Time{}
	}
	return fromNanos(n).In(q.loc)
}

// Entry is one key's pending work, as [Queue.Pending] reports it.
type Entry[K comparable, V any] struct {
	Key   K
	Value V
	// At is the time the work was scheduled for (not the time of a pending retry), in the
	// location of the clock's times.
	At time.Time
}

// Pending returns a copy of all pending work, ordered by the time it was scheduled for (ties
// in no defined order). It holds the queue's lock while it copies, O(n), and sorts after
// releasing it: meant for previews and debugging, not for a hot path.
func (q *Queue[K, V]) Pending() []Entry[K, V] {
	type ordered struct {
		e   Entry[K, V]
		due int64
		seq int32
	}
	q.mu.Lock()
	out := make([]ordered, 0, q.index.len())
	for i := range q.slots.len() {
		s := q.slots.at(int32(i))
		if s.isPending() {
			out = append(out, ordered{Entry[K, V]{Key: s.key, Value: s.value}, s.due, int32(i)})
		}
	}
	q.mu.Unlock()
	slices.SortFunc(out, func(a, b ordered) int {
		if c := cmp.Compare(a.due, b.due); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	entries := make([]Entry[K, V], len(out))
	for i := range out {
		entries[i] = out[i].e
		entries[i].At = q.timeOf(out[i].due)
	}
	return entries
}

// Len returns the number of keys with pending or running work.
func (q *Queue[K, V]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.index.len()
}
