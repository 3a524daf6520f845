package timedqueue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// WorkFunc is the work a [Queue] runs when a key is due. ctx is the one passed to
// [Queue.Run]: it is cancelled when Run is stopping, and the work should then return soon.
// The queue does not retry: work that wants another try schedules its key again. A panic
// in it is not recovered: it ends the program, as in any goroutine.
type WorkFunc[K comparable, V any] func(ctx context.Context, key K, value V)

// DefaultWorkers is the number of workers of a queue whose [Options] leave Workers 0.
const DefaultWorkers = 8

// Options configures a [Queue]. The zero value gives the real clock and [DefaultWorkers]
// workers.
type Options struct {
	// Clock tells the time and makes the one timer the queue uses. nil means the real clock.
	// Tests pass a k8s.io/utils/clock/testing.FakeClock, step it, and call
	// [Queue.WaitIdle] to wait for the work the step made due; a step right after WaitIdle
	// returns fires exactly the work it makes due.
	Clock clock.Clock
	// Workers is the most work functions that may run at once. 0 means DefaultWorkers; a
	// negative value is an error.
	Workers int
}

// ErrRunTwice is returned by [Queue.Run] when the queue has already been run.
var ErrRunTwice = errors.New("timedqueue: Run called more than once")

// Queue runs work for keys at the times they are scheduled for, on a bounded pool of
// workers. It holds at most one pending work per key: scheduling a key again moves or
// replaces its work, and Cancel removes it.
//
// Due work is taken in deadline order, ties in the order they were scheduled (see the
// package doc for what that means with several workers). The same key never runs twice at
// once: work that comes due while its key runs starts once the running call has returned.
// It keeps one timer and starts at most Options.Workers goroutines, never a goroutine or a
// timer per key.
//
// All methods are safe for concurrent use, and none of them blocks on running work but
// Queue.Run, once it stops, and Queue.WaitIdle, which wait for it on purpose. The zero
// Queue is not usable: create one with New.
type Queue[K comparable, V any] struct {
	work       WorkFunc[K, V]
	clock      clock.Clock
	loc        *time.Location // of the clock's times, for the times the queue returns
	seed       maphash.Seed   // of the keys' hashes
	maxWorkers int
	started    chan struct{} // closed when Run starts

	// mu guards everything below, and the entries. It is held for a map and heap operation
	// at a time, while the clock is read and the timer set, and for the rebuild of the
	// index after a drain (shrink); never while work runs. It is the queue's only lock; the
	// clock's own are taken under it.
	mu      sync.Mutex
	cond    sync.Cond               // idle workers wait here for due work
	entries map[uint64]*entry[K, V] // the index (entry.go): by the key's hash
	keys    int                     // the entries in the index
	peak    int                     // the most entries since the index was rebuilt (shrink)
	heap    entryHeap[K, V]
	seq     uint64        // the number of the last Schedule that set a deadline
	runner                // Run's state, its timer and its workers (run.go)
	idle    chan struct{} // closed on the next change, for WaitIdle; nil when none waits
}

// New returns a Queue that calls work for each key when it is due, once [Queue.Run] runs.
// It returns an error, and no queue, when work is nil or Options.Workers is negative.
func New[K comparable, V any](work WorkFunc[K, V], opts Options) (*Queue[K, V], error) {
	if work == nil {
		return nil, errors.New("timedqueue: nil work function")
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("timedqueue: Workers is %d, must not be negative", opts.Workers)
	}
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	q := &Queue[K, V]{
		work:       work,
		clock:      opts.Clock,
		loc:        opts.Clock.Now().Location(),
		seed:       maphash.MakeSeed(),
		maxWorkers: opts.Workers,
		started:    make(chan struct{}),
		entries:    make(map[uint64]*entry[K, V]),
	}
	q.limit = opts.Workers
	q.cond.L = &q.mu
	return q, nil
}

// Schedule schedules work for key at time at, with value, replacing any work pending for
// key. It never blocks on running work.
//
//   - When key is pending at the same time already, only its value is replaced: its place
//     among work due at that time stays.
//   - When key is pending at another time, it moves there, earlier or later.
//   - When key is running and has no work pending, the new work runs after the running call
//     returns, at time at or later. A work function schedules its own key this way to try
//     again.
//
// Schedule reports whether it scheduled or moved work, false when it only replaced a value.
//
// A time at or before now (the zero time included) runs as soon as a worker is free. Times
// are kept in nanoseconds between the years 1678 and 2262; times outside are clamped.
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
	t, h := toNanos(at), q.hash(key)
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.lookup(h, key)
	switch {
	case e == nil:
		e = &entry[K, V]{key: key, index: -1}
		q.insert(h, e)
	case e.pending() && earlierOnly && e.at <= t:
		return false
	case e.pending() && e.at == t:
		e.value = value
		return false
	}
	q.seq++
	e.value, e.at, e.seq = value, t, q.seq
	if e.index >= 0 {
		q.heap.fix(int(e.index))
	} else {
		e.parked = false // due again later: it is taken, and parked, again if still running
		q.heap.push(e)
	}
	if e.index == 0 {
		q.arm(toNanos(q.clock.Now()), false)
	}
	q.changed()
	return true
}

// Cancel removes the pending work of key, waiting or due, and reports whether there was
// any. It does not interrupt or wait for a call of key's work that is running (as
// [time.Timer.Stop] does not wait for its function). Work it removed never starts after
// it returns.
func (q *Queue[K, V]) Cancel(key K) bool {
	h := q.hash(key)
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.lookup(h, key)
	if e == nil {
		return false
	}
	removed := e.pending()
	if e.index >= 0 {
		q.heap.remove(int(e.index))
	}
	e.parked = false
	if !e.running {
		q.drop(h, e)
	}
	q.changed()
	return removed
}

// hash returns key's hash for the index. It needs no lock.
func (q *Queue[K, V]) hash(key K) uint64 { return maphash.Comparable(q.seed, key) }

// Get returns the value and the time key is scheduled for, and true, when key has work
// pending, waiting or due. It returns false when key has no pending work, even if a call of
// its work is running. The time is in the location of the clock's times.
func (q *Queue[K, V]) Get(key K) (value V, at time.Time, ok bool) {
	h := q.hash(key)
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.lookup(h, key)
	if e == nil || !e.pending() {
		return value, time.Time{}, false
	}
	return e.value, q.timeOf(e.at), true
}

// Entry is one key's pending work, as [Queue.Pending] reports it.
type Entry[K comparable, V any] struct {
	Key   K
	Value V
	// At is the time the work is scheduled for, in the location of the clock's times.
	At time.Time
}

// Pending returns a copy of all pending work, in the order it is due: by time, ties in the
// order scheduled. It holds the queue's lock while it copies, O(n), and sorts after
// releasing it: meant for previews and debugging, not for a hot path.
func (q *Queue[K, V]) Pending() []Entry[K, V] {
	q.mu.Lock()
	due := make([]entry[K, V], 0, q.keys)
	for _, e := range q.entries {
		for ; e != nil; e = e.next {
			if e.pending() {
				due = append(due, *e)
			}
		}
	}
	q.mu.Unlock()
	slices.SortFunc(due, func(a, b entry[K, V]) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq))
	})
	out := make([]Entry[K, V], len(due))
	for i, e := range due {
		out[i] = Entry[K, V]{Key: e.key, Value: e.value, At: q.timeOf(e.at)}
	}
	return out
}

// Len returns the number of keys with work pending or running.
func (q *Queue[K, V]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.keys
}

// Deadlines are kept as int64 unix nanoseconds, which covers the years 1678 to 2262; times
// outside are clamped to minNanos and maxNanos. The zero time.Time is zeroNanos, before all
// others.
const (
	zeroNanos = math.MinInt64
	minNanos  = math.MinInt64 + 1
	maxNanos  = math.MaxInt64
)

var minTime, maxTime = time.Unix(0, minNanos), time.Unix(0, maxNanos)

func toNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return zeroNanos
	case t.Before(minTime):
		return minNanos
	case t.After(maxTime):
		return maxNanos
	}
	return t.UnixNano()
}

// timeOf turns a deadline back into a time in the location of the clock's times.
func (q *Queue[K, V]) timeOf(n int64) time.Time {
	if n == zeroNanos {
		return time.Time{}
	}
	return time.Unix(0, n).In(q.loc)
}

// until returns how long from now until at, without overflowing.
func until(at, now int64) time.Duration {
	if now < 0 && at > math.MaxInt64+now {
		return math.MaxInt64
	}
	return time.Duration(at - now)
}
