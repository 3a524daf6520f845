package timedqueue

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// runOutOfNumbers makes the next nextSeq renumber, as when 32 bits of numbers are used up.
func runOutOfNumbers(q *Queue[string, int]) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seqLimit = q.seq
}

// TestRenumberWhileRunning: a key replaced while its attempt runs, whose new generation
// came due and was parked, has no item and a claim of replaced work when the numbers run
// out. The renumbered key must not look as if its running attempt were current: when the
// attempt returns, the parked generation runs, with its value.
func TestRenumberWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Workers: 2})
		h.rec.gate("a")
		h.schedule("a", 1, epoch)
		h.start()
		h.wantCalls("a blocks", "a=1@+0s")
		h.schedule("a", 2, at(-time.Second)) // another time, due while a runs
		synctest.Wait()
		if st := slotState(h.q, "a"); st&parked == 0 {
			t.Fatalf("test setup: a's flags %b, want it parked", st)
		}
		runOutOfNumbers(h.q)
		h.schedule("b", 3, at(time.Second)) // renumbers: a is in use, but named by no item
		if err := h.q.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		h.release("a", nil)
		h.wantCalls("after a returns", "a=1@+0s", "a=2@+0s")
		h.release("a", nil) // the second attempt blocks on the gate too
		h.step(time.Second)
		h.wantCalls("at +1s", "a=1@+0s", "a=2@+0s", "b=3@+1s")
		h.wantLen(0)
	})
}

// slotState returns the flags of key's slot, 0 if it has none.
func slotState(q *Queue[string, int], key string) uint32 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if idx, ok := q.index.get(key); ok {
		return q.slots.at(idx).state
	}
	return 0
}

// TestRenumberKeepsClaims: items claimed behind a blocking one keep their places and their
// claims through a renumbering. A Schedule for a claimed key's own time then only replaces
// its value, a Cancel of a claimed key removes it, and the others run in their order.
func TestRenumberKeepsClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Workers: 1})
		h.rec.gate("a")
		for _, k := range []string{"a", "x", "y", "z"} {
			h.schedule(k, 1, epoch)
		}
		h.schedule("later", 1, at(time.Minute))
		h.start()
		h.wantCalls("a blocks", "a=1@+0s")
		runOutOfNumbers(h.q)
		if got := h.schedule("y", 2, epoch); got {
			t.Fatal("Schedule of a claimed key at its time after renumbering: got true, want false (value only)")
		}
		if !h.unschedule("z") {
			t.Fatal("Cancel of a claimed key after renumbering: got false, want true")
		}
		if err := h.q.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		h.release("a", nil)
		h.wantCalls("after a", "a=1@+0s", "x=1@+0s", "y=2@+0s")
		h.step(time.Minute)
		h.wantCalls("at +1m", "a=1@+0s", "x=1@+0s", "y=2@+0s", "later=1@+1m0s")
	})
}

// TestRenumberReadyRun: a burst waiting in the ready run, with stale items among it, is
// renumbered and then runs in the order it was scheduled, ahead of work scheduled after the
// renumbering for the same time.
func TestRenumberReadyRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		h := startBurst(t, n)
		if readyLen(h.q) == 0 {
			t.Fatal("test setup: no ready run")
		}
		var want []string
		for i := range n {
			if i > maxBatch && i%3 == 0 {
				h.unschedule(burstKey(i)) // a stale item in the run
				continue
			}
			want = append(want, fmt.Sprintf("%s=1@+0s", burstKey(i)))
		}
		runOutOfNumbers(h.q)
		h.schedule("after", 2, epoch)
		want = append(want, "after=2@+0s")
		if err := h.q.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		h.release(burstKey(0), nil)
		if got := h.rec.got(); !slices.Equal(got, want) {
			t.Fatalf("calls: got %d, want %d, first difference at %d", len(got), len(want), firstDiff(got, want))
		}
	})
}
