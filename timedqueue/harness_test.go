package timedqueue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"
)

// epoch is the fake clock's start in every test.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns epoch+d.
func at(d time.Duration) time.Time { return epoch.Add(d) }

// rel formats t relative to epoch ("+1.5s", "zero").
func rel(t time.Time) string {
	if t.IsZero() {
		return "zero"
	}
	d := t.Sub(epoch)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// call is one invocation of the work function.
type call struct {
	Key   string
	Value int
	At    time.Time // the fake clock when the work started
}

func (c call) String() string { return fmt.Sprintf("%s=%d@%s", c.Key, c.Value, rel(c.At)) }

// recorder is a work function that records its calls and can be told, per key, to fail, to
// panic once, or to block until the test releases it.
type recorder struct {
	clk clock.PassiveClock

	mu         sync.Mutex
	calls      []call
	gates      map[string]chan error // work for key blocks until it receives its result here
	fail       map[string]error      // returned by every ungated attempt of key
	panics     map[string]any        // the next attempt of key panics with this
	active     map[string]int        // attempts of key running now
	overlaps   []string              // keys that ran twice at once
	running    int
	maxRunning int
	ctxDone    map[string]bool // key's last attempt returned with ctx done
}

func newRecorder(clk clock.PassiveClock) *recorder {
	return &recorder{
		clk:     clk,
		gates:   map[string]chan error{},
		fail:    map[string]error{},
		panics:  map[string]any{},
		active:  map[string]int{},
		ctxDone: map[string]bool{},
	}
}

func (r *recorder) work(ctx context.Context, key string, value int) error {
	r.mu.Lock()
	r.calls = append(r.calls, call{Key: key, Value: value, At: r.clk.Now()})
	r.active[key]++
	if r.active[key] > 1 {
		r.overlaps = append(r.overlaps, key)
	}
	r.running++
	r.maxRunning = max(r.maxRunning, r.running)
	gate, err := r.gates[key], r.fail[key]
	p, doPanic := r.panics[key]
	delete(r.panics, key)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.active[key]--
		r.running--
		r.ctxDone[key] = ctx.Err() != nil
		r.mu.Unlock()
	}()
	if doPanic {
		panic(p)
	}
	if gate != nil {
		err = <-gate
	}
	return err
}

// gate makes every later attempt of key block until release.
func (r *recorder) gate(key string) chan error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gates[key] == nil {
		r.gates[key] = make(chan error)
	}
	return r.gates[key]
}

func (r *recorder) setFail(key string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail[key] = err
}

func (r *recorder) setPanic(key string, v any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.panics[key] = v
}

// got returns the calls so far as strings such as "a=1@+10s".
func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.calls))
	for i, c := range r.calls {
		out[i] = c.String()
	}
	return out
}

// gotFrom returns the calls from the i-th on, like got.
func (r *recorder) gotFrom(i int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.calls[min(i, len(r.calls)):] {
		out = append(out, c.String())
	}
	return out
}

// eventLog records events as strings: the Schedule and Cancel calls that changed
// something, through harness.schedule and harness.unschedule, and the start and the end of
// every attempt, through harness.loggedWork.
type eventLog struct {
	mu   sync.Mutex
	list []string
}

func (l *eventLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, fmt.Sprintf(format, args...))
}

// take returns the events recorded since the last take.
func (l *eventLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.list
	l.list = nil
	return ev
}

// harness runs a Queue[string, int] on a fake clock inside a synctest bubble.
type harness struct {
	t      *testing.T
	clk    *testclock.FakeClock
	q      *Queue[string, int]
	rec    *recorder
	events *eventLog // nil for a bare harness
	cancel context.CancelFunc
	done   chan error
	runErr error
}

// newHarness makes a queue with a fake clock at epoch and a recorder as its work function,
// with an eventLog: the work function is wrapped in loggedWork. It must be called inside
// synctest.Test.
func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{events: &eventLog{}}
	h.init(t, opts, h.loggedWork)
	return h
}

// newBareHarness is newHarness without the eventLog: the work function is the recorder's,
// which does not look into the queue, as work outside these tests does not.
func newBareHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{}
	h.init(t, opts, nil)
	return h
}

// init makes h's fake clock, recorder and queue, whose work function is work, or the
// recorder's when work is nil.
func (h *harness) init(t *testing.T, opts Options, work WorkFunc[string, int]) {
	t.Helper()
	h.t, h.clk = t, testclock.NewFakeClock(epoch)
	h.rec = newRecorder(h.clk)
	if work == nil {
		work = h.rec.work
	}
	opts.Clock = h.clk
	q, err := New(work, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.q = q
	t.Cleanup(func() {
		h.stop()
		if err := h.q.checkInvariants(); err != nil {
			t.Errorf("after the test: %v", err)
		}
		h.rec.mu.Lock()
		defer h.rec.mu.Unlock()
		if len(h.rec.overlaps) > 0 {
			t.Errorf("keys ran twice at once: %v", h.rec.overlaps)
		}
	})
}

// loggedWork is the recorder's work function, with its start and its end logged: "started
// KEY #N lag=L" before it, with the attempt number and the lag that the worker's claim
// holds, and "succeeded KEY #N", "failed KEY #N ERR" or "panicked KEY #N" after it. It
// reads the claim through the work function, which the queue calls anyway, so that the
// worker's loop has no hook for the tests. Of what the queue does after the attempt, the
// tests see the retry time through nextAttempt.
func (h *harness) loggedWork(ctx context.Context, key string, value int) error {
	n, lag := h.q.attemptOf(key)
	h.events.add("started %s #%d lag=%v", key, n, lag)
	returned := false
	defer func() {
		if !returned {
			h.events.add("panicked %s #%d", key, n) // the queue recovers the panic
		}
	}()
	err := h.rec.work(ctx, key, value)
	returned = true
	if err != nil {
		h.events.add("failed %s #%d %v", key, n, err)
	} else {
		h.events.add("succeeded %s #%d", key, n)
	}
	return err
}

// attemptOf returns the number and the lag of the attempt of key that a worker has claimed,
// from its claim; 0 and 0 when no worker has. The work function of key calls it while the
// attempt runs.
func (q *Queue[K, V]) attemptOf(key K) (n int, lag time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	idx, ok := q.index.get(key)
	if !ok {
		return 0, 0
	}
	c := q.claimOf(idx)
	if c == nil {
		return 0, 0
	}
	return int(c.a.n), c.a.lag
}

// nextAttempt returns when the pending work of key is to start next: the time of its live
// item, which for work waiting to retry is the retry time (Get returns the time the work
// was scheduled for). It returns false when key has no live item: no pending work, or work
// parked behind its running attempt.
func (q *Queue[K, V]) nextAttempt(key K) (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	idx, ok := q.index.get(key)
	if !ok {
		return time.Time{}, false
	}
	for _, it := range slices.Concat([]item(q.heap), q.ready) {
		if it.slot == idx && q.live(it) {
			return q.timeOf(it.at), true
		}
	}
	return time.Time{}, false
}

// schedule calls Schedule and, when it changed something, logs "scheduled KEY TIME". The
// log's lock is held across the call, so that the entry comes before the start of the work,
// which may begin before Schedule returns.
func (h *harness) schedule(key string, value int, t time.Time) bool {
	if h.events == nil {
		return h.q.Schedule(key, value, t)
	}
	h.events.mu.Lock()
	defer h.events.mu.Unlock()
	changed := h.q.Schedule(key, value, t)
	if changed {
		h.events.list = append(h.events.list, fmt.Sprintf("scheduled %s %s", key, rel(t)))
	}
	return changed
}

// unschedule calls Cancel and, when it removed work, logs "cancelled KEY".
func (h *harness) unschedule(key string) bool {
	if h.events == nil {
		return h.q.Cancel(key)
	}
	h.events.mu.Lock()
	defer h.events.mu.Unlock()
	removed := h.q.Cancel(key)
	if removed {
		h.events.list = append(h.events.list, "cancelled "+key)
	}
	return removed
}

// start runs the queue and waits until it is idle.
func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.q.Run(ctx) }()
	synctest.Wait()
}

// stop cancels Run's context and waits for Run to return; it returns Run's error.
func (h *harness) stop() error {
	if h.cancel != nil {
		h.cancel()
		h.cancel = nil
		h.runErr = <-h.done
	}
	return h.runErr
}

// step waits until the queue is idle, advances the fake clock and waits until the queue is
// idle again. The first wait matters: the dispatcher computes a duration from the clock and
// then arms its timer with it, so a Step between the two would push the timer out by the
// step, and a fake clock, unlike a real one, never catches up.
func (h *harness) step(d time.Duration) {
	synctest.Wait()
	h.clk.Step(d)
	synctest.Wait()
}

// release makes the blocked attempt of key return err, and waits until the queue is idle.
func (h *harness) release(key string, err error) {
	h.rec.gate(key) <- err
	synctest.Wait()
}

func (h *harness) wantCalls(when string, want ...string) {
	h.t.Helper()
	got := h.rec.got()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		h.t.Fatalf("%s: calls: got %v, want %v", when, got, want)
	}
}

// wantCallsAnyOrder is wantCalls for work started on several workers, whose calls are
// recorded in no defined order.
func (h *harness) wantCallsAnyOrder(when string, want ...string) {
	h.t.Helper()
	got := h.rec.got()
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		h.t.Fatalf("%s: calls (sorted): got %v, want %v", when, got, want)
	}
}

// wantKeyEvents takes all events and compares those of key with want.
func (h *harness) wantKeyEvents(when, key string, want ...string) {
	h.t.Helper()
	var got []string
	for _, e := range h.events.take() {
		if strings.Fields(e)[1] == key {
			got = append(got, e)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		h.t.Fatalf("%s: events of %s:\n got %q\nwant %q", when, key, got, want)
	}
}

func (h *harness) wantEvents(when string, want ...string) {
	h.t.Helper()
	got := h.events.take()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		h.t.Fatalf("%s: events:\n got %q\nwant %q", when, got, want)
	}
}

// wantGet checks the time and the ok that Get returns for key.
func (h *harness) wantGet(key string, want time.Time, wantOK bool) {
	h.t.Helper()
	_, got, ok := h.q.Get(key)
	if ok != wantOK || !got.Equal(want) {
		h.t.Fatalf("Get(%q): got time %s, %v, want %s, %v", key, rel(got), ok, rel(want), wantOK)
	}
}

// wantNextAttempt checks the time nextAttempt returns for key.
func (h *harness) wantNextAttempt(when, key string, want time.Time, wantOK bool) {
	h.t.Helper()
	got, ok := h.q.nextAttempt(key)
	if ok != wantOK || !got.Equal(want) {
		h.t.Fatalf("%s: next attempt of %s: got %s, %v, want %s, %v", when, key, rel(got), ok, rel(want), wantOK)
	}
}

func (h *harness) wantLen(want int) {
	h.t.Helper()
	if got := h.q.Len(); got != want {
		h.t.Fatalf("Len: got %d, want %d", got, want)
	}
}

// checkIndexEntries verifies that every slot in use or retired has exactly one entry in
// the index, and no other slot has one. q.mu must be held.
func (q *Queue[K, V]) checkIndexEntries() error {
	if err := q.index.check(); err != nil {
		return err
	}
	entries := make(map[int32]int)
	for _, e := range q.index.table {
		if e == 0 {
			continue
		}
		idx := q.index.slotOf(e)
		if int(idx) >= q.slots.len() || q.slots.at(idx).state&(inUse|retired) == 0 {
			return fmt.Errorf("index entry names slot %d, which is free (of %d)", idx, q.slots.len())
		}
		entries[idx]++
	}
	for i := range q.slots.len() {
		want := 0
		if q.slots.at(int32(i)).state&(inUse|retired) != 0 {
			want = 1
		}
		if got := entries[int32(i)]; got != want {
			return fmt.Errorf("slot %d (flags %b): %d index entries, want %d", i, q.slots.at(int32(i)).state, got, want)
		}
	}
	return nil
}

// checkInvariants verifies the queue's internal bookkeeping: index and slots agree, the free
// list holds exactly the unused slots, every pending key that is not parked has exactly one
// live heap item, parked keys have none and are running, the stale count is exact, the heap
// is ordered, and each worker's run names a running slot.
func (q *Queue[K, V]) checkInvariants() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	used, retiredSlots := 0, 0
	for i := range q.slots.len() {
		switch st := q.slots.at(int32(i)).state; {
		case st&inUse != 0:
			used++
		case st == retired:
			retiredSlots++
		case st != 0:
			return fmt.Errorf("slot %d neither in use nor retired, with flags %b", i, st)
		}
	}
	if used != q.index.len() {
		return fmt.Errorf("slots in use: got %d, want index length %d", used, q.index.len())
	}
	if retiredSlots != q.index.retired {
		return fmt.Errorf("retired slots: got %d, index says %d", retiredSlots, q.index.retired)
	}
	if len(q.free)+used+retiredSlots != q.slots.len() {
		return fmt.Errorf("free %d + used %d + retired %d != slots %d", len(q.free), used, retiredSlots, q.slots.len())
	}
	if err := q.checkIndexEntries(); err != nil {
		return err
	}
	for _, f := range q.free {
		if q.slots.at(f).state != 0 {
			return fmt.Errorf("free slot %d has flags %b", f, q.slots.at(f).state)
		}
	}
	for i := range q.slots.len() {
		s := q.slots.at(int32(i))
		if s.state&inUse == 0 {
			continue
		}
		k := s.key
		if idx, ok := q.index.get(k); !ok || idx != int32(i) {
			return fmt.Errorf("index of key %v: got %d %v, want slot %d", k, idx, ok, i)
		}
		if s.state&(pending|running) == 0 {
			return fmt.Errorf("key %v indexed but neither pending nor running", k)
		}
		if s.state&parked != 0 && s.state&(pending|running) != pending|running {
			return fmt.Errorf("key %v parked but flags %b", k, s.state)
		}
	}
	for i := 1; i < len(q.heap); i++ {
		if q.heap[i].less(q.heap[(i-1)/4]) {
			return fmt.Errorf("heap order broken at %d", i)
		}
	}
	if !inOrder(q.ready) {
		return fmt.Errorf("ready run out of order: %v", q.ready)
	}
	live := make(map[int32]int)
	stale := 0
	for _, it := range slices.Concat([]item(q.heap), q.ready) {
		if int(it.slot) >= q.slots.len() {
			return fmt.Errorf("heap item names slot %d of %d", it.slot, q.slots.len())
		}
		if q.live(it) {
			live[it.slot]++
		} else {
			stale++
		}
	}
	if stale != q.dead {
		return fmt.Errorf("stale heap items: got %d, dead says %d", stale, q.dead)
	}
	for i := range q.slots.len() {
		s := q.slots.at(int32(i))
		want := 0
		if s.state&(pending|parked) == pending {
			want = 1
		}
		if live[int32(i)] != want {
			return fmt.Errorf("slot %d (key %v, flags %b): %d live heap items, want %d", i, s.key, s.state, live[int32(i)], want)
		}
	}
	runningSlots := 0
	for i := range q.slots.len() {
		if q.slots.at(int32(i)).state&running != 0 {
			runningSlots++
		}
	}
	claims := 0
	for w := range q.batches {
		b := &q.batches[w]
		for i := range b.n {
			c := &b.claims[i]
			st := c.state.Load()
			if st != claimed && st != started && st != done {
				if c.slot != -1 {
					return fmt.Errorf("worker %d: claim %d in state %d names slot %d", w, i, st, c.slot)
				}
				continue
			}
			claims++
			s := q.slots.at(c.slot)
			if s.state&running == 0 || q.claimOf(c.slot) != c {
				return fmt.Errorf("worker %d claims slot %d with state %b, which another claim names too", w, c.slot, s.state)
			}
		}
	}
	if claims != runningSlots || claims != q.active {
		return fmt.Errorf("running slots %d, claims %d, active %d", runningSlots, claims, q.active)
	}
	return q.checkGens()
}

// checkGens verifies the numbers (seq.go): every key in use has a gen of its own, given
// already and never 0, and no item or claim carries a number not given yet. q.mu must be
// held.
func (q *Queue[K, V]) checkGens() error {
	owner := make(map[uint32]int)
	for i := range q.slots.len() {
		s := q.slots.at(int32(i))
		if s.state&inUse == 0 {
			continue
		}
		if s.gen == 0 || s.gen > q.seq {
			return fmt.Errorf("slot %d (key %v): gen %d, numbers given up to %d", i, s.key, s.gen, q.seq)
		}
		if j, ok := owner[s.gen]; ok {
			return fmt.Errorf("slots %d and %d share gen %d", j, i, s.gen)
		}
		owner[s.gen] = i
	}
	for _, it := range slices.Concat([]item(q.heap), q.ready) {
		if it.seq > q.seq {
			return fmt.Errorf("item %+v has a number after the last given, %d", it, q.seq)
		}
	}
	var err error
	q.batches.each(func(c *claim[K, V]) {
		if c.it.seq > q.seq && err == nil {
			err = fmt.Errorf("claim of slot %d has number %d, after the last given, %d", c.slot, c.it.seq, q.seq)
		}
	})
	return err
}

var errBoom = errors.New("boom")
