package timedqueue

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// TestCancelAllPending is the regression test for a panic: when a compaction found every
// heap item stale (cancel the last 64 or more pending keys), it called init on an empty heap,
// which indexed h[0] and panicked inside Cancel with the lock held.
func TestCancelAllPending(t *testing.T) {
	for _, n := range []int{63, 64, 65, 256, 300, 5000} {
		for _, running := range []bool{false, true} {
			t.Run(fmt.Sprintf("n=%d/running=%v", n, running), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := newBareHarness(t, Options{})
					if running {
						h.start()
					}
					for i := range n {
						h.schedule(fmt.Sprint("k", i), i, at(time.Hour))
					}
					cancel := func(k string) bool {
						defer func() {
							if r := recover(); r != nil {
								h.q.mu.Unlock() // it panicked with the lock held
								t.Fatalf("Cancel(%s) panicked: %v", k, r)
							}
						}()
						return h.unschedule(k)
					}
					for i := range n {
						if !cancel(fmt.Sprint("k", i)) {
							t.Fatalf("Cancel(k%d): got false, want true", i)
						}
					}
					h.wantLen(0)
					if err := h.q.checkInvariants(); err != nil {
						t.Fatal(err)
					}
					h.schedule("after", 1, at(2*time.Hour))
					if !running {
						h.start()
					}
					h.step(2 * time.Hour)
					h.wantCalls("after cancelling all", "after=1@+2h0m0s")
				})
			})
		}
	}
}

// dueOf is the deadline of key i in the drain tests: whole seconds in [1s, 1000s].
func dueOf(r *rand.Rand) time.Duration { return time.Duration(1+r.IntN(1000)) * time.Second }

// stepThrough steps the clock a second at a time to +1000s and checks that every key in
// want ran once, at its time, with its value, and nothing else ran.
func stepThrough(t *testing.T, h *harness, want map[string]time.Duration, values map[string]int, from time.Duration) {
	t.Helper()
	for now := from; now < 1000*time.Second; now += time.Second {
		h.step(time.Second)
	}
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	seen := map[string]bool{}
	for _, c := range h.rec.calls {
		d, ok := want[c.Key]
		if !ok {
			continue // ran before the drain, checked by the caller
		}
		if seen[c.Key] {
			t.Fatalf("%s ran twice", c.Key)
		}
		seen[c.Key] = true
		if !c.At.Equal(at(d)) || c.Value != values[c.Key] {
			t.Fatalf("%s: got %d at %s, want %d at %s", c.Key, c.Value, rel(c.At), values[c.Key], rel(at(d)))
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("keys run after the drain: got %d, want %d", len(seen), len(want))
	}
}

// TestLargeDrainCancel: 20k keys, 19k cancelled; the slots, index and heap are rebuilt
// smaller, and the 1k that remain keep their times and values.
func TestLargeDrainCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBareHarness(t, Options{})
		h.start()
		r := rand.New(rand.NewPCG(7, 7))
		const n, keep = 20000, 1000
		due := map[string]time.Duration{}
		values := map[string]int{}
		for i := range n {
			k := fmt.Sprint("k", i)
			due[k] = dueOf(r)
			values[k] = i
			h.schedule(k, i, at(due[k]))
		}
		// Move a quarter of them, so that the heap holds stale items when it is rebuilt.
		for i := 0; i < n; i += 4 {
			k := fmt.Sprint("k", i)
			due[k] = dueOf(r)
			values[k] = -i
			h.schedule(k, -i, at(due[k]))
		}
		slotsBefore := h.q.slots.len()
		for _, i := range r.Perm(n)[:n-keep] {
			k := fmt.Sprint("k", i)
			if !h.unschedule(k) {
				t.Fatalf("Cancel(%s): got false, want true", k)
			}
			delete(due, k)
		}
		h.wantLen(keep)
		if err := h.q.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		h.q.mu.Lock()
		slots, heapCap, dead := h.q.slots.len(), cap(h.q.heap), h.q.dead
		h.q.mu.Unlock()
		if slots > 2*keep+minShrink/4 || heapCap > 2*minShrink || slots >= slotsBefore {
			t.Errorf("after the drain: %d slots (from %d), heap capacity %d, %d stale: want them rebuilt small", slots, slotsBefore, heapCap, dead)
		}
		for k, d := range due {
			h.wantGet(k, at(d), true)
		}
		stepThrough(t, h, due, values, 0)
		h.wantLen(0)
	})
}

// TestLargeDrainRun: 20k keys, 19k of them run at once; the rest run at their times.
func TestLargeDrainRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBareHarness(t, Options{})
		r := rand.New(rand.NewPCG(8, 8))
		const n, keep = 20000, 1000
		due := map[string]time.Duration{}
		values := map[string]int{}
		for i := range n {
			k := fmt.Sprint("k", i)
			d := time.Second
			if i%(n/keep) == 0 {
				d = time.Duration(2+r.IntN(999)) * time.Second // [2s, 1000s]
				due[k] = d
				values[k] = i
			}
			h.schedule(k, i, at(d))
		}
		h.start()
		h.step(time.Second)
		if got := len(h.rec.got()); got != n-keep {
			t.Fatalf("after the burst: %d calls, want %d", got, n-keep)
		}
		h.wantLen(keep)
		if err := h.q.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		h.q.mu.Lock()
		slots, heapCap := h.q.slots.len(), cap(h.q.heap)
		h.q.mu.Unlock()
		if slots > 2*keep+minShrink/4 || heapCap > 2*minShrink {
			t.Errorf("after the burst: %d slots, heap capacity %d, want them rebuilt small", slots, heapCap)
		}
		for k, d := range due {
			h.wantGet(k, at(d), true)
		}
		stepThrough(t, h, due, values, time.Second)
		h.wantLen(0)
	})
}

// TestShrinkWithRunningKeys: rebuilding the slots while keys run remaps the workers' runs;
// what was done to the running keys meanwhile (moved, parked, cancelled) survives.
func TestShrinkWithRunningKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBareHarness(t, Options{Workers: 5, Backoff: Backoff{Base: time.Hour, Jitter: -1}})
		h.start()
		const n = 20000
		// Fill first, so that the running keys sit at high slot indexes.
		for i := range n {
			h.schedule(fmt.Sprint("k", i), i, at(time.Hour))
		}
		for _, k := range []string{"moved", "parked", "cancelled", "done"} {
			h.rec.gate(k)
			h.schedule(k, 1, epoch)
		}
		synctest.Wait()
		h.wantCallsAnyOrder("four keys running", "moved=1@+0s", "parked=1@+0s", "cancelled=1@+0s", "done=1@+0s")
		h.schedule("moved", 2, at(30*time.Minute))
		h.schedule("parked", 2, epoch.Add(1)) // due: the fifth worker parks it
		h.unschedule("cancelled")
		h.step(1)
		// Move half of the rest, then cancel all of them: compactions and slot rebuilds.
		for i := 0; i < n; i += 2 {
			h.schedule(fmt.Sprint("k", i), i, at(2*time.Hour))
		}
		for i := range n {
			h.unschedule(fmt.Sprint("k", i))
		}
		if err := h.q.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		h.q.mu.Lock()
		slots := h.q.slots.len()
		h.q.mu.Unlock()
		if slots > minShrink {
			t.Errorf("slots after cancelling %d: got %d, want them rebuilt", n, slots)
		}
		h.wantLen(4)
		h.wantGet("moved", at(30*time.Minute), true)
		h.wantGet("parked", epoch.Add(1), true)
		h.wantGet("cancelled", time.Time{}, false)

		h.release("moved", errBoom) // replaced while running: not retried
		h.release("cancelled", errBoom)
		h.release("done", errBoom) // retried in an hour
		h.release("parked", nil)
		h.wantCallsAnyOrder("after the first attempts",
			"moved=1@+0s", "parked=1@+0s", "cancelled=1@+0s", "done=1@+0s", "parked=2@+1ns")
		h.release("parked", nil)
		h.step(30 * time.Minute)
		h.release("moved", nil)
		h.step(30 * time.Minute)
		h.release("done", nil)
		h.wantCallsAnyOrder("all",
			"moved=1@+0s", "parked=1@+0s", "cancelled=1@+0s", "done=1@+0s", "parked=2@+1ns",
			"moved=2@+30m0.000000001s", "done=1@+1h0m0.000000001s")
		h.wantLen(0)
		h.step(3 * time.Hour)
		if got := len(h.rec.got()); got != 7 {
			t.Fatalf("calls after 3 more hours: got %d, want 7", got)
		}
	})
}

// TestSweepsDoNotAllocate: the sweeps that drop stale items, the compaction a run of
// cancels causes and the renumbering when the numbers run out, move the live items in place.
// A sweep that took the address of each item's copy moved every live item to the heap: one
// allocation per item per sweep.
func TestSweepsDoNotAllocate(t *testing.T) {
	h := newBareHarness(t, Options{})
	const n = 10_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
		h.q.Schedule(keys[i], i, at(time.Hour+time.Duration(i)*time.Millisecond))
	}
	mallocs := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	// 7,000 cancels compact the heap several times, sweeping thousands of live items, and
	// leave enough keys that the slots are not rebuilt (which allocates a new table).
	got := mallocs(func() {
		for _, k := range keys[:7000] {
			if !h.q.Cancel(k) {
				t.Fatalf("Cancel(%s): got false, want true", k)
			}
		}
	})
	if got > 64 { // a few, when the heap's array is shrunk
		t.Errorf("7,000 cancels, with their compactions: got %d allocations, want at most 64", got)
	}
	// Renumbering allocates its table of new numbers, one slice, and nothing per item.
	runOutOfNumbers(h.q)
	got = mallocs(func() { h.q.Schedule(keys[0], 0, at(time.Hour)) })
	if got > 8 {
		t.Errorf("a Schedule that renumbers 3,000 keys: got %d allocations, want at most 8", got)
	}
	h.wantLen(3001)
}
