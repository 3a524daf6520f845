package timedqueue

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// The tests of the batch drain: a worker claims up to maxBatch due items in one hold of the
// lock and starts them one after another.

// TestBatchCancelAndReschedule: a key claimed in a batch whose call has not started yet is
// taken back by Cancel, and by Schedule, which then act on it as on pending work: the
// cancelled key never runs, a key scheduled for the same time runs with the new value, and
// a key moved to later runs then.
func TestBatchCancelAndReschedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Workers: 1})
		h.rec.gate("a")
		for _, k := range []string{"a", "cancelled", "same", "moved", "last"} {
			h.schedule(k, 1, epoch)
		}
		h.start() // one batch: a runs and blocks, the others are claimed behind it
		h.wantCalls("while a blocks", "a=1@+0s")
		if got := claimedKeys(h.q); fmt.Sprint(got) != "[cancelled same moved last]" {
			t.Fatalf("claimed, not started: got %v, want [cancelled same moved last] (one batch)", got)
		}
		if !h.unschedule("cancelled") {
			t.Fatal("Cancel of a claimed key: got false, want true (its work had not started)")
		}
		if got := h.schedule("same", 2, epoch); got {
			t.Fatal("Schedule of a claimed key at its time: got true, want false (value only)")
		}
		if got := h.schedule("moved", 3, at(time.Minute)); !got {
			t.Fatal("Schedule of a claimed key at another time: got false, want true")
		}
		h.wantGet("same", epoch, true)
		h.wantLen(4) // a running; same, moved and last pending
		h.release("a", nil)
		h.wantCalls("after a", "a=1@+0s", "same=2@+0s", "last=1@+0s")
		h.step(time.Minute)
		h.wantCalls("at +1m", "a=1@+0s", "same=2@+0s", "last=1@+0s", "moved=3@+1m0s")
		h.wantLen(0)
	})
}

// claimedKeys returns the keys claimed by a worker whose calls have not started.
func claimedKeys(q *Queue[string, int]) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var keys []string
	for w := range q.batches {
		b := &q.batches[w]
		for i := range b.n {
			if c := &b.claims[i]; c.state.Load() == claimed {
				keys = append(keys, c.a.key)
			}
		}
	}
	return keys
}

// TestBatchNoHeadOfLineBlocking: work claimed behind a call that blocks is taken over by
// an idle worker, so that it does not wait for that call.
func TestBatchNoHeadOfLineBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Workers: 2})
		h.rec.gate("a")
		h.rec.gate("b")
		keys := []string{"a", "b", "c", "d", "e"}
		for _, k := range keys {
			h.schedule(k, 1, epoch)
		}
		h.start()
		h.wantCallsAnyOrder("a and b block, each on one worker", "a=1@+0s", "b=1@+0s")
		h.release("b", nil)
		h.wantCallsAnyOrder("after b", "a=1@+0s", "b=1@+0s", "c=1@+0s", "d=1@+0s", "e=1@+0s")
		h.release("a", nil)
		h.wantLen(0)
	})
}

// TestBatchFinishesBeforeASlowCall: the outcome of an attempt that returned is recorded
// before the next call of its batch starts, when the lock is free, so that a slow call does
// not keep the keys before it counted as running.
func TestBatchFinishesBeforeASlowCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Workers: 1})
		h.rec.gate("slow")
		h.schedule("fast", 1, epoch)
		h.schedule("slow", 1, epoch)
		h.start()
		h.wantCalls("slow blocks", "fast=1@+0s", "slow=1@+0s")
		h.wantLen(1)
		h.wantEvents("fast finished", "scheduled fast +0s", "scheduled slow +0s",
			"started fast #1 lag=0s", "succeeded fast #1", "started slow #1 lag=0s")
		h.release("slow", nil)
		h.wantLen(0)
	})
}

// TestBatchSize: a burst of due work is claimed in batches of maxBatch.
func TestBatchSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBareHarness(t, Options{Workers: 1})
		h.rec.gate("k0")
		for i := range 2 * maxBatch {
			h.schedule(fmt.Sprint("k", i), i, epoch)
		}
		h.start()
		if got, want := len(claimedKeys(h.q)), maxBatch-1; got != want {
			t.Fatalf("claimed, not started, while k0 blocks: got %d, want %d", got, want)
		}
		h.release("k0", nil)
		if got := len(h.rec.got()); got != 2*maxBatch {
			t.Fatalf("calls: got %d, want %d", got, 2*maxBatch)
		}
	})
}

// TestRunning: Running sees the attempt a worker has taken, started or not, with the value
// and time it runs with, and stops seeing it once Cancel or Schedule has replaced its work
// or it has returned.
func TestRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Workers: 1})
		h.rec.gate("a")
		h.schedule("a", 1, epoch)
		h.schedule("b", 2, epoch)
		h.schedule("c", 3, epoch)
		h.schedule("later", 4, at(time.Minute))
		h.start() // a runs and blocks; b and c are claimed behind it, not started
		for _, tc := range []struct {
			key    string
			want   int
			wantOK bool
		}{
			{"a", 1, true},        // started
			{"b", 2, true},        // claimed, not started
			{"later", 0, false},   // pending, not running
			{"missing", 0, false}, // unknown
		} {
			v, when, ok := h.q.Running(tc.key)
			if v != tc.want || ok != tc.wantOK || (ok && !when.Equal(epoch)) {
				t.Errorf("Running(%q): got %d %v %v, want %d %v at +0s", tc.key, v, rel(when), ok, tc.want, tc.wantOK)
			}
		}
		h.unschedule("c") // taken back: no longer running
		if _, _, ok := h.q.Running("c"); ok {
			t.Error("Running(c) after Cancel: got true, want false")
		}
		h.schedule("a", 5, at(time.Second)) // replaced while it runs
		if _, _, ok := h.q.Running("a"); ok {
			t.Error("Running(a) after a Schedule for another time: got true, want false")
		}
		h.release("a", nil)
		if _, _, ok := h.q.Running("b"); ok {
			t.Error("Running(b) after it ran: got true, want false")
		}
	})
}
