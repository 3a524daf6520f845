package timedqueue

import (
	"context"
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

// recorder is a work function that records its calls and can be told, per key, to block
// until the test releases it.
type recorder struct {
	clk clock.PassiveClock

	mu         sync.Mutex
	calls      []call
	gates      map[string]chan struct{} // work for key blocks until it receives here
	active     map[string]int           // calls of key running now
	overlaps   []string                 // keys that ran twice at once
	running    int
	maxRunning int
	ctxDone    map[string]bool // key's last call returned with ctx done
}

func newRecorder(clk clock.PassiveClock) *recorder {
	return &recorder{
		clk:     clk,
		gates:   map[string]chan struct{}{},
		active:  map[string]int{},
		ctxDone: map[string]bool{},
	}
}

func (r *recorder) work(ctx context.Context, key string, value int) {
	r.mu.Lock()
	r.calls = append(r.calls, call{Key: key, Value: value, At: r.clk.Now()})
	r.active[key]++
	if r.active[key] > 1 {
		r.overlaps = append(r.overlaps, key)
	}
	r.running++
	r.maxRunning = max(r.maxRunning, r.running)
	gate := r.gates[key]
	r.mu.Unlock()
	if gate != nil {
		<-gate
	}
	r.mu.Lock()
	r.active[key]--
	r.running--
	r.ctxDone[key] = ctx.Err() != nil
	r.mu.Unlock()
}

// gate makes every later call of key block until release.
func (r *recorder) gate(key string) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gates[key] == nil {
		r.gates[key] = make(chan struct{})
	}
	return r.gates[key]
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
// every call of the work, through harness.loggedWork.
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
// KEY" before it and "returned KEY" after it.
func (h *harness) loggedWork(ctx context.Context, key string, value int) {
	h.events.add("started %s", key)
	h.rec.work(ctx, key, value)
	h.events.add("returned %s", key)
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
// idle again. The first wait matters: the queue computes a duration from the clock and then
// sets its timer with it, so a Step between the two would push the timer out by the step,
// and a fake clock, unlike a real one, never catches up.
func (h *harness) step(d time.Duration) {
	synctest.Wait()
	h.clk.Step(d)
	synctest.Wait()
}

// release makes the blocked call of key return, and waits until the queue is idle.
func (h *harness) release(key string) {
	h.rec.gate(key) <- struct{}{}
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

func (h *harness) wantLen(want int) {
	h.t.Helper()
	if got := h.q.Len(); got != want {
		h.t.Fatalf("Len: got %d, want %d", got, want)
	}
}

// checkInvariants verifies the queue's bookkeeping: every entry of the index is under its
// key's hash, once, with work pending or running, and len counts them; the heap holds
// exactly the entries with an index, each at its index, in order; parked entries are
// running and out of the heap; active counts the running entries.
func (q *Queue[K, V]) checkInvariants() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, inHeap, running := 0, 0, 0
	seen := map[K]bool{}
	for h, e := range q.entries {
		for ; e != nil; e = e.next {
			if err := q.checkEntry(h, e); err != nil {
				return err
			}
			if seen[e.key] {
				return fmt.Errorf("key %v: two entries", e.key)
			}
			seen[e.key] = true
			n++
			if e.index >= 0 {
				inHeap++
			}
			if e.running {
				running++
			}
		}
	}
	if n != q.keys {
		return fmt.Errorf("index: %d entries, keys says %d", n, q.keys)
	}
	if inHeap != len(q.heap) {
		return fmt.Errorf("heap: %d entries, %d in the index name a place in it", len(q.heap), inHeap)
	}
	for i := 1; i < len(q.heap); i++ {
		if q.heap[i].before(q.heap[(i-1)/4]) {
			return fmt.Errorf("heap order broken at %d", i)
		}
	}
	if running != q.active {
		return fmt.Errorf("running entries %d, active %d", running, q.active)
	}
	return nil
}

// checkEntry verifies one entry of the index, found under the hash h.
func (q *Queue[K, V]) checkEntry(h uint64, e *entry[K, V]) error {
	switch k := e.key; {
	case q.hash(k) != h:
		return fmt.Errorf("key %v: under hash %x, its hash is %x", k, h, q.hash(k))
	case !e.pending() && !e.running:
		return fmt.Errorf("key %v: neither pending nor running", k)
	case e.parked && (!e.running || e.index >= 0):
		return fmt.Errorf("key %v: parked, running %v, heap index %d", k, e.running, e.index)
	case int(e.index) >= len(q.heap) || (e.index >= 0 && q.heap[e.index] != e):
		return fmt.Errorf("key %v: heap index %d, not its place in a heap of %d", k, e.index, len(q.heap))
	}
	return nil
}
