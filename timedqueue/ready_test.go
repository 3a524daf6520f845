package timedqueue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// The tests of the ready run: when a large share of the heap is due at once, a worker takes
// the due items out of the heap in one pass and hands them out from a sorted run.

// readyLen returns how many items the ready run holds.
func readyLen(q *Queue[string, int]) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ready)
}

// burstKey names the i-th key of a burst so that the names sort as the keys were made.
func burstKey(i int) string { return fmt.Sprintf("k%05d", i) }

// TestReadyRunTakesABurst: with 3000 keys due at once, the first claim takes a batch and
// moves the other 2968 into the run; they then run in the order they were scheduled. With
// only 100 of 3000 due, no pass is made: popping them is cheaper.
func TestReadyRunTakesABurst(t *testing.T) {
	for _, tc := range []struct {
		name      string
		due       int // of 3000 keys; the others are due a minute later
		wantReady int
	}{
		{"all due", 3000, 3000 - maxBatch},
		{"two thirds due", 2000, 2000 - maxBatch},
		{"a thirtieth due", 100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 3000
				h := newBareHarness(t, Options{Workers: 1})
				h.rec.gate(burstKey(0))
				var want, later []string
				for i := range n {
					// Spread the later keys evenly among the due ones, so that both are
					// spread over the heap's array.
					if i*(n-tc.due)/n != (i+1)*(n-tc.due)/n {
						h.schedule(burstKey(i), 1, at(time.Minute))
						later = append(later, fmt.Sprintf("%s=1@+1m0s", burstKey(i)))
						continue
					}
					h.schedule(burstKey(i), 1, epoch)
					want = append(want, fmt.Sprintf("%s=1@+0s", burstKey(i)))
				}
				if len(later) != n-tc.due {
					t.Fatalf("test setup: %d keys due later, want %d", len(later), n-tc.due)
				}
				h.start()
				if got := readyLen(h.q); got != tc.wantReady {
					t.Errorf("ready run after the first claim: got %d items, want %d", got, tc.wantReady)
				}
				if err := h.q.checkInvariants(); err != nil {
					t.Fatal(err)
				}
				h.release(burstKey(0), nil)
				if got := h.rec.got(); !slices.Equal(got, want) {
					t.Fatalf("calls: got %d, want %d, first difference at %d", len(got), len(want), firstDiff(got, want))
				}
				h.step(time.Minute)
				if got := h.rec.gotFrom(len(want)); !slices.Equal(got, later) {
					t.Fatalf("calls at +1m: got %d, want %d, first difference at %d", len(got), len(later), firstDiff(got, later))
				}
			})
		})
	}
}

// startBurst schedules n keys due at once, with the first one's work blocking until the
// test releases it, and starts one worker: it takes a batch, and the rest wait in the run.
func startBurst(t *testing.T, n int) *harness {
	h := newBareHarness(t, Options{Workers: 1})
	h.rec.gate(burstKey(0))
	for i := range n {
		h.schedule(burstKey(i), 1, epoch)
	}
	h.start()
	return h
}

// firstDiff returns the first index where a and b differ.
func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestReadyRunSortsScattered: 3000 keys with past deadlines scheduled in random order (many
// sharing a deadline) run in deadline order, ties in the order they were scheduled, though
// the pass finds them out of order in the heap's array and must sort them.
func TestReadyRunSortsScattered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		h := newBareHarness(t, Options{Workers: 1})
		rng := rand.New(rand.NewPCG(7, 11))
		type sched struct {
			key string
			at  time.Time
		}
		var all []sched
		for i := range n {
			s := sched{burstKey(i), at(-time.Duration(rng.IntN(500)) * time.Second)}
			all = append(all, s)
			h.schedule(s.key, 1, s.at)
		}
		h.start()
		slices.SortStableFunc(all, func(a, b sched) int { return a.at.Compare(b.at) })
		var want []string
		for _, s := range all {
			want = append(want, s.key+"=1@+0s") // the recorder notes when a call starts
		}
		if got := h.rec.got(); !slices.Equal(got, want) {
			i := firstDiff(got, want)
			t.Fatalf("calls: got %d, want %d, first difference at %d: got %v, want %v", len(got), len(want), i, got[i], want[i])
		}
	})
}

// TestReadyRunChanges: while a burst waits in the run, Cancel, Schedule and new keys act on
// it as on the heap: a cancelled key never runs, a moved key runs at its new time, a new
// value is used, and a new key due earlier than the run's items runs before them.
func TestReadyRunChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		h := startBurst(t, n)
		if got := readyLen(h.q); got == 0 {
			t.Fatal("ready run after the first claim: empty, want the burst in it")
		}
		if !h.unschedule(burstKey(100)) {
			t.Error("Cancel of a key in the run: got false, want true")
		}
		h.schedule(burstKey(200), 2, at(time.Minute))
		h.schedule(burstKey(300), 3, epoch)
		h.schedule("early", 4, at(-time.Second))
		h.schedule("late", 5, at(time.Second))
		if err := h.q.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		h.release(burstKey(0), nil)

		var want []string
		for i := range n {
			switch {
			case i == maxBatch: // the first batch was claimed before early was scheduled
				want = append(want, "early=4@+0s")
			}
			switch i {
			case 100, 200:
			case 300:
				want = append(want, burstKey(i)+"=3@+0s")
			default:
				want = append(want, burstKey(i)+"=1@+0s")
			}
		}
		if got := h.rec.got(); !slices.Equal(got, want) {
			i := firstDiff(got, want)
			t.Fatalf("calls: got %d, want %d, first difference at %d: got %v, want %v", len(got), len(want), i, got[i:i+1], want[i])
		}
		h.step(time.Second)
		h.step(time.Minute)
		if got, want := h.rec.gotFrom(len(want)), []string{"late=5@+1s", burstKey(200) + "=2@+1m1s"}; !slices.Equal(got, want) {
			t.Fatalf("later calls: got %v, want %v", got, want)
		}
	})
}

// TestReadyRunCompaction: cancelling most of a burst while it waits in the run compacts the
// run with the heap, and the keys left run in order.
func TestReadyRunCompaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		h := startBurst(t, n)
		before := readyLen(h.q)
		var want []string
		for i := range n {
			switch {
			case i < maxBatch:
				want = append(want, burstKey(i)+"=1@+0s") // claimed: they run
			case i%10 != 0:
				h.unschedule(burstKey(i))
			default:
				want = append(want, burstKey(i)+"=1@+0s")
			}
		}
		if got := readyLen(h.q); got >= before/2 {
			t.Errorf("ready run after cancelling 9 in 10: got %d items of %d, want it compacted", got, before)
		}
		if err := h.q.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		h.release(burstKey(0), nil)
		if got := h.rec.got(); !slices.Equal(got, want) {
			t.Fatalf("calls: got %d, want %d, first difference at %d", len(got), len(want), firstDiff(got, want))
		}
	})
}

// TestReadyRunRefusesLargeSort: more than maxSortRun due items out of order are not sorted
// under the lock: the pass puts them back, with the fifth of the keys that are not due yet,
// and the worker pops them, until the heap has halved; then a pass sorts the rest. They
// run in deadline order throughout, and the keys due later at their time.
func TestReadyRunRefusesLargeSort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := maxSortRun*5/4 + 2000
		h := newBareHarness(t, Options{Workers: 1})
		var later []string
		rng := rand.New(rand.NewPCG(9, 10))
		type sched struct {
			key string
			at  time.Time
		}
		var all []sched
		for i := range n {
			if i%5 == 4 {
				h.schedule(burstKey(i), 1, at(time.Minute))
				later = append(later, burstKey(i)+"=1@+1m0s")
				continue
			}
			s := sched{burstKey(i), at(-time.Duration(rng.IntN(5000)) * time.Millisecond)}
			all = append(all, s)
			h.schedule(s.key, 1, s.at)
		}
		slices.SortStableFunc(all, func(a, b sched) int { return a.at.Compare(b.at) })
		h.rec.gate(all[0].key)
		h.start()
		h.q.mu.Lock()
		ready, below := len(h.q.ready), h.q.extractBelow
		h.q.mu.Unlock()
		if ready != 0 || below != n/2 {
			t.Fatalf("after the first pass: %d items in the run, retried below %d; want 0 and %d", ready, below, n/2)
		}
		h.release(all[0].key, nil)
		want := make([]string, len(all))
		for i, s := range all {
			want[i] = s.key + "=1@+0s"
		}
		if got := h.rec.got(); !slices.Equal(got, want) {
			i := firstDiff(got, want)
			t.Fatalf("calls: got %d, want %d, first difference at %d", len(got), len(want), i)
		}
		h.q.mu.Lock()
		below = h.q.extractBelow
		h.q.mu.Unlock()
		if below != 0 {
			t.Errorf("after the drain: retried below %d, want 0 (a later pass sorted the rest)", below)
		}
		h.step(time.Minute)
		if got := h.rec.gotFrom(len(want)); !slices.Equal(got, later) {
			t.Fatalf("calls at +1m: got %d, want %d, first difference at %d", len(got), len(later), firstDiff(got, later))
		}
	})
}

// TestReadyRunRetiresSlots: the slots of a burst handed out from the ready run are retired
// (their index entries stay), and the next keys scheduled get them back through a sweep
// instead of growing the slots; everything still runs once, in order.
func TestReadyRunRetiresSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const due, later = 3000, 2000
		h := newBareHarness(t, Options{Workers: 1})
		for i := range due + later {
			when := epoch
			if i >= due {
				when = at(time.Hour)
			}
			h.schedule(burstKey(i), 1, when)
		}
		h.start()
		h.q.mu.Lock()
		retiredN, slots := h.q.index.retired, h.q.slots.len()
		h.q.mu.Unlock()
		if retiredN < due-maxBatch || slots != due+later {
			t.Fatalf("after the burst: %d retired slots of %d; want at least %d retired", retiredN, slots, due-maxBatch)
		}
		for i := range due {
			h.schedule(fmt.Sprintf("new%05d", i), 2, at(time.Minute))
		}
		h.q.mu.Lock()
		retiredN, slots = h.q.index.retired, h.q.slots.len()
		h.q.mu.Unlock()
		if retiredN != 0 || slots != due+later {
			t.Errorf("after %d new keys: %d retired, %d slots; want 0 and %d (swept and reused)", due, retiredN, slots, due+later)
		}
		if err := h.q.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		h.step(time.Minute)
		if got := len(h.rec.got()); got != 2*due {
			t.Errorf("calls after +1m: got %d, want %d", got, 2*due)
		}
	})
}
