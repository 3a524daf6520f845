package timedqueue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
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

// Slot state: flags in the low byte, the attempts made of the current generation above.
// Packing both into one word keeps a slot at 48 bytes for 16-byte keys and values.
const (
	inUse   uint32 = 1 << iota // the slot belongs to a key in the index
	pending                    // the current generation waits to run (in the heap, or parked)
	parked                     // pending, came due while the key was running, not in the heap
	running                    // a worker runs an attempt of this key

	flagBits       = 0xff
	attemptOne     = 1 << 8
	attemptCeiling = 1<<24 - 1 // attempt numbers stop growing there (decades of retries)
)

// slot holds one key's state. Slots live in one slice and are found through the index, so a
// pending item costs no allocation of its own and no pointer for the collector to chase.
type slot[K comparable, V any] struct {
	key   K
	value V
	due   int64  // the time the current generation was scheduled for
	gen   uint32 // bumped by every schedule and cancel; heap items carry it
	state uint32 // flags | attempts<<8
}

func (s *slot[K, V]) attempts() uint32 { return s.state >> 8 }

// run is what a worker remembers of the attempt it runs.
type run struct {
	slot int32
	gen  uint32
	due  int64
}

// Queue runs work for keys at the times they are scheduled for, on a bounded pool of
// workers, with retries. It holds one entry per key: scheduling a key again moves or
// replaces its work, and Cancel removes it.
//
// Due work starts in deadline order, ties in the order they were scheduled. The same key
// never runs twice at once; a Schedule or Cancel that comes while the key runs takes effect
// for the next attempt and is not undone when the running one ends.
//
// One goroutine (the caller of Run) keeps one timer armed for the earliest deadline; Workers
// goroutines run the work. There is never a goroutine or timer per key.
//
// All methods are safe for concurrent use, and none of them blocks on running work. The
// zero Queue is not usable: create one with [New].
type Queue[K comparable, V any] struct {
	work    WorkFunc[K, V]
	clock   clock.Clock
	backoff Backoff
	obs     Observer[K]
	kick    chan struct{}

	mu      sync.Mutex
	cond    sync.Cond // workers wait here for due work
	index   index[K, V]
	slots   []slot[K, V]
	free    []int32
	heap    itemHeap
	dead    int // stale items in heap
	seq     uint64
	runs    []run // one per worker
	armed   int64 // what the dispatcher's timer is set for; maxNanos: nothing; <= now: none needed
	started bool
	closed  bool
}

// New returns a Queue that calls work for each key when it is due, once [Queue.Run] runs.
// It returns an error, and no queue, when work is nil or an option is out of range.
func New[K comparable, V any](work WorkFunc[K, V], opts Options[K]) (*Queue[K, V], error) {
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
		work:    work,
		clock:   clk,
		backoff: b,
		obs:     opts.Observer,
		kick:    make(chan struct{}, 1),
		runs:    make([]run, workers),
		armed:   maxNanos,
	}
	for w := range q.runs {
		q.runs[w].slot = -1
	}
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
//   - When key is running, the new work runs after the running attempt returns, whatever
//     that attempt's outcome; the running attempt is then not retried. Scheduling a running
//     key for the time it runs for only replaces the value its retries will use.
//
// Schedule reports whether it scheduled or moved work, false when it only replaced a value.
//
// A time at or before now (the zero time included) runs as soon as a worker is free. Times
// are kept in nanoseconds between the years 1678 and 2262; later ones are clamped to 2262.
func (q *Queue[K, V]) Schedule(key K, value V, at time.Time) bool {
	t := toNanos(at)
	if q.obs != nil {
		// Report before the work can start, so that an observer sees Scheduled before
		// Started even for work due at once: look, report outside the lock, then act.
		q.mu.Lock()
		_, _, same := q.unchangedLocked(key, value, t)
		q.mu.Unlock()
		if same {
			return false
		}
		q.obs.Scheduled(key, at)
	}
	q.mu.Lock()
	idx, ok, same := q.unchangedLocked(key, value, t)
	if same {
		q.mu.Unlock()
		return false
	}
	if ok {
		if s := &q.slots[idx]; s.state&(pending|parked) == pending {
			q.dead++ // its heap item goes stale
		}
	} else {
		idx = q.alloc(key)
	}
	s := &q.slots[idx]
	s.gen++
	s.value, s.due = value, t
	s.state = s.state&flagBits&^parked | pending // attempts start again
	q.heap.push(item{at: t, seq: q.seq, slot: idx, gen: s.gen})
	q.seq++
	kick := t < q.armed
	q.compactHeap()
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
	s := &q.slots[idx]
	same = s.state&pending != 0 && s.due == t
	if s.state&(pending|running) == running {
		if r := q.runOf(idx); r != nil {
			same = s.gen == r.gen && r.due == t
		}
	}
	if same {
		s.value = value
	}
	return idx, true, same
}

// Cancel removes the pending work of key, waiting or due or waiting to retry, and reports
// whether there was any. It does not interrupt or wait for an attempt that is running (as
// time.Timer.Stop does not wait for its function), but that attempt is not retried if it
// fails.
func (q *Queue[K, V]) Cancel(key K) bool {
	q.mu.Lock()
	idx, ok := q.index.get(key)
	if !ok {
		q.mu.Unlock()
		return false
	}
	s := &q.slots[idx]
	removed := s.state&pending != 0
	if s.state&(pending|parked) == pending {
		q.dead++
	}
	s.gen++
	s.state &^= pending | parked
	if s.state&running == 0 {
		q.release(idx)
	}
	q.compactHeap()
	q.mu.Unlock()
	if removed && q.obs != nil {
		q.obs.Cancelled(key)
	}
	return removed
}

// When returns the time key is scheduled for and true, when key has work pending (waiting,
// due, or waiting to retry: then the time is still the one it was scheduled for). It
// returns false when key has no pending work, even if an attempt of it is running.
func (q *Queue[K, V]) When(key K) (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	idx, ok := q.index.get(key)
	if !ok || q.slots[idx].state&pending == 0 {
		return time.Time{}, false
	}
	return fromNanos(q.slots[idx].due), true
}

// Get returns the value and the time key is scheduled for, and true, when key has work
// pending; like [Queue.When] otherwise.
func (q *Queue[K, V]) Get(key K) (value V, at time.Time, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	idx, ok := q.index.get(key)
	if !ok || q.slots[idx].state&pending == 0 {
		return value, time.Time{}, false
	}
	s := &q.slots[idx]
	return s.value, fromNanos(s.due), true
}

// Entry is one key's pending work, as [Queue.Pending] reports it.
type Entry[K comparable, V any] struct {
	Key   K
	Value V
	// At is the time the work was scheduled for (not the time of a pending retry).
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
	for i := range q.slots {
		s := &q.slots[i]
		if s.state&pending != 0 {
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
		entries[i].At = fromNanos(out[i].due)
	}
	return entries
}

// Len returns the number of keys with pending or running work.
func (q *Queue[K, V]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.index.len()
}

// Run runs due work until ctx is done. Then it stops starting work, waits for every running
// attempt to return (their ctx, which is ctx, is done too) and returns ctx's error. Work
// still pending stays in the queue, where Len and When see it. Every goroutine Run starts
// has ended when it returns. A Queue runs once: a second call returns [ErrRunTwice].
func (q *Queue[K, V]) Run(ctx context.Context) error {
	q.mu.Lock()
	if q.started {
		q.mu.Unlock()
		return ErrRunTwice
	}
	q.started = true
	q.mu.Unlock()

	var wg sync.WaitGroup
	for w := range q.runs {
		wg.Go(func() { q.worker(ctx, int32(w)) })
	}
	q.dispatch(ctx)

	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
	wg.Wait()
	return ctx.Err()
}

// wake asks the dispatcher to look at the heap again.
func (q *Queue[K, V]) wake() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// dispatch keeps one timer armed for the earliest deadline and wakes the workers when it
// passes. Workers take due items themselves; the dispatcher only wakes them, so a burst of
// due work costs no hand-off per item.
func (q *Queue[K, V]) dispatch(ctx context.Context) {
	timer := q.clock.NewTimer(time.Hour)
	stopTimer(timer)
	defer stopTimer(timer)
	for {
		wait := time.Duration(-1)
		q.mu.Lock()
		q.dropStale()
		if len(q.heap) == 0 {
			q.armed = maxNanos
		} else {
			now := toNanos(q.clock.Now())
			if at := q.heap[0].at; at <= now {
				q.armed = now
				q.cond.Broadcast()
			} else {
				q.armed = at
				wait = sub(at, now)
			}
		}
		q.mu.Unlock()

		stopTimer(timer)
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-q.kick:
		case <-timer.C():
		}
	}
}

// stopTimer stops t and drains a value it may have delivered, so that a later Reset cannot
// be followed by a stale tick (fake clocks still deliver one) and a fake clock never blocks
// sending to a full channel.
func stopTimer(t clock.Timer) {
	t.Stop()
	select {
	case <-t.C():
	default:
	}
}

// worker takes due items off the heap and runs them until the queue closes.
func (q *Queue[K, V]) worker(ctx context.Context, w int32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	// ctx is checked too: closed is set only once the dispatcher has seen ctx done, and
	// until then a worker returning from an attempt would start the next due item.
	for !q.closed && ctx.Err() == nil {
		q.dropStale()
		if len(q.heap) == 0 {
			q.armed = maxNanos // the dispatcher sleeps until a Schedule wakes it
			q.cond.Wait()
			continue
		}
		now := toNanos(q.clock.Now())
		head := q.heap[0]
		if head.at > now {
			if head.at < q.armed || q.armed <= now {
				q.wake() // the dispatcher is not armed for this head yet
			}
			q.cond.Wait()
			continue
		}
		q.heap.pop()
		q.shrinkHeap()
		s := &q.slots[head.slot]
		if s.state&running != 0 {
			s.state |= parked // runs when the current attempt of this key returns
			continue
		}
		s.state = s.state&^pending | running
		if s.attempts() < attemptCeiling {
			s.state += attemptOne
		}
		q.runs[w] = run{slot: head.slot, gen: s.gen, due: s.due}
		key, value, attempt := s.key, s.value, s.attempts()

		q.mu.Unlock()
		if q.obs != nil {
			var lag time.Duration // none for the zero time and times before 1678: "at once"
			if head.at > minNanos {
				lag = max(0, sub(now, head.at))
			}
			q.obs.Started(key, int(attempt), lag)
		}
		err := q.call(ctx, key, value)
		q.mu.Lock()

		retryAt := q.finish(w, attempt, err)
		if q.obs != nil {
			q.mu.Unlock()
			if err == nil {
				q.obs.Succeeded(key, int(attempt))
			} else {
				q.obs.Failed(key, int(attempt), err, retryAt)
			}
			q.mu.Lock()
		}
	}
}

// call runs the work function, turning a panic into a *PanicError.
func (q *Queue[K, V]) call(ctx context.Context, key K, value V) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return q.work(ctx, key, value)
}

// finish records the outcome of worker w's attempt and returns when it will be retried
// (zero for never). q.mu must be held.
func (q *Queue[K, V]) finish(w int32, attempt uint32, err error) (retryAt time.Time) {
	r := q.runs[w]
	q.runs[w] = run{slot: -1}
	s := &q.slots[r.slot]
	s.state &^= running
	switch {
	case s.gen != r.gen && s.state&pending != 0:
		// Replaced while running: the new generation runs now if it came due meanwhile.
		if s.state&parked != 0 {
			s.state &^= parked
			q.heap.push(item{at: s.due, seq: q.seq, slot: r.slot, gen: s.gen})
			q.seq++
		}
	case s.gen != r.gen:
		q.release(r.slot) // cancelled while running
	case err == nil || (q.backoff.MaxAttempts > 0 && int(attempt) >= q.backoff.MaxAttempts):
		q.release(r.slot)
	default:
		at := add(toNanos(q.clock.Now()), q.backoff.delay(attempt))
		s.state |= pending
		q.heap.push(item{at: at, seq: q.seq, slot: r.slot, gen: s.gen})
		q.seq++
		retryAt = fromNanos(at)
	}
	return retryAt
}

// runOf returns the run of the worker that runs slot idx, or nil. A slot does not record
// its worker: the scan over the few workers is cheaper than 4 bytes in every slot.
func (q *Queue[K, V]) runOf(idx int32) *run {
	for w := range q.runs {
		if q.runs[w].slot == idx {
			return &q.runs[w]
		}
	}
	return nil
}

// alloc takes a free slot for key, or appends one. q.mu must be held.
func (q *Queue[K, V]) alloc(key K) int32 {
	var idx int32
	if n := len(q.free); n > 0 {
		idx = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		q.slots = append(q.slots, slot[K, V]{})
		idx = int32(len(q.slots) - 1)
	}
	s := &q.slots[idx]
	s.key = key
	s.state = inUse
	q.index.put(key, idx)
	return idx
}

// release frees the slot of a key that has no pending or running work. Its generation is
// kept, so heap items that still name the slot stay stale after it is reused. q.mu must be
// held.
func (q *Queue[K, V]) release(idx int32) {
	s := &q.slots[idx]
	q.index.remove(s.key)
	var zeroK K
	var zeroV V
	s.key, s.value, s.state = zeroK, zeroV, 0
	q.free = append(q.free, idx)
	q.shrinkSlots()
}

// live reports whether it is the current, pending, generation of its slot.
func (q *Queue[K, V]) live(it item) bool {
	s := &q.slots[it.slot]
	return s.gen == it.gen && s.state&(pending|parked) == pending
}

// dropStale pops stale items off the top of the heap. q.mu must be held.
func (q *Queue[K, V]) dropStale() {
	for len(q.heap) > 0 && !q.live(q.heap[0]) {
		q.heap.pop()
		q.dead--
	}
}

// compactHeap drops every stale item once they are a quarter of the heap, so that lazy
// cancellation costs O(1) amortized and bounded memory. q.mu must be held.
func (q *Queue[K, V]) compactHeap() {
	if q.dead < 64 || q.dead*4 < len(q.heap) {
		return
	}
	h := q.heap[:0]
	for _, it := range q.heap {
		if q.live(it) {
			h = append(h, it)
		}
	}
	clear(q.heap[len(h):])
	q.heap = h
	q.heap.init()
	q.dead = 0
	q.shrinkHeap()
}

// minShrink is the capacity under which slices and maps are never rebuilt smaller.
const minShrink = 4096

// shrinkHeap gives memory back after a large drain. q.mu must be held.
func (q *Queue[K, V]) shrinkHeap() {
	if c := cap(q.heap); c > minShrink && len(q.heap) < c/4 {
		q.heap = append(make(itemHeap, 0, 2*len(q.heap)), q.heap...)
	}
}

// shrinkSlots rebuilds the slots, the free list and the index once fewer than a quarter of
// the slots are used, since a Go map never shrinks by itself. The cost, O(n), is paid once
// per n releases. q.mu must be held.
func (q *Queue[K, V]) shrinkSlots() {
	if n := len(q.slots); n <= minShrink || q.index.len() >= n/4 {
		return
	}
	remap := make([]int32, len(q.slots))
	slots := make([]slot[K, V], 0, 2*q.index.len())
	for i := range q.slots {
		s := &q.slots[i]
		if s.state&inUse == 0 {
			remap[i] = -1
			continue
		}
		remap[i] = int32(len(slots))
		slots = append(slots, *s)
	}
	h := q.heap[:0]
	for _, it := range q.heap {
		if q.live(it) {
			it.slot = remap[it.slot]
			h = append(h, it)
		}
	}
	clear(q.heap[len(h):])
	q.heap = h
	q.heap.init()
	q.dead = 0
	for w := range q.runs {
		if q.runs[w].slot >= 0 {
			q.runs[w].slot = remap[q.runs[w].slot]
		}
	}
	q.slots, q.free = slots, nil
	q.index.rebuild(len(slots))
	for i := range q.slots {
		q.index.put(q.slots[i].key, int32(i))
	}
	q.shrinkHeap()
}
