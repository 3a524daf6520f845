package timedqueue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

// The kube timed-worker scenarios (pkg/controller/tainteviction/timed_workers_test.go).

func TestExecute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		for i := range 5 {
			if got := h.schedule(fmt.Sprint("k", i), i, h.clk.Now()); !got {
				t.Fatalf("Schedule(k%d): got %v, want true", i, got)
			}
		}
		h.wantLen(5)
		h.start()
		h.wantCallsAnyOrder("after Run", "k0=0@+0s", "k1=1@+0s", "k2=2@+0s", "k3=3@+0s", "k4=4@+0s")
		h.wantLen(0)
	})
}

func TestExecuteDelayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		h.start()
		for i := range 5 {
			h.schedule(fmt.Sprint("k", i), i, at(10*time.Second))
		}
		synctest.Wait()
		h.wantCallsAnyOrder("before the step")
		h.step(10*time.Second - 1)
		h.wantCallsAnyOrder("1ns before the deadline")
		h.step(1)
		h.wantCallsAnyOrder("at the deadline", "k0=0@+10s", "k1=1@+10s", "k2=2@+10s", "k3=3@+10s", "k4=4@+10s")
		h.step(time.Hour)
		h.wantCallsAnyOrder("an hour later", "k0=0@+10s", "k1=1@+10s", "k2=2@+10s", "k3=3@+10s", "k4=4@+10s")
		h.wantLen(0)
	})
}

func TestCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		h.start()
		for i := range 5 {
			h.schedule(fmt.Sprint("k", i), i, at(10*time.Second))
		}
		for _, k := range []string{"k1", "k3"} {
			if got := h.unschedule(k); !got {
				t.Fatalf("first Cancel(%s): got %v, want true", k, got)
			}
			if got := h.unschedule(k); got {
				t.Fatalf("second Cancel(%s): got %v, want false", k, got)
			}
			h.wantGet(k, time.Time{}, false)
		}
		if got := h.unschedule("never-scheduled"); got {
			t.Fatalf("Cancel of an unknown key: got %v, want false", got)
		}
		h.wantLen(3)
		h.step(10 * time.Second)
		h.wantCallsAnyOrder("at the deadline", "k0=0@+10s", "k2=2@+10s", "k4=4@+10s")
		h.step(time.Hour)
		h.wantCallsAnyOrder("an hour later", "k0=0@+10s", "k2=2@+10s", "k4=4@+10s")
		h.wantLen(0)
	})
}

func TestCancelAndReadd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		h.start()
		for i := range 5 {
			h.schedule(fmt.Sprint("k", i), i, at(10*time.Second))
		}
		h.unschedule("k1")
		h.unschedule("k3")
		if got := h.schedule("k1", 11, at(20*time.Second)); !got {
			t.Fatalf("Schedule after Cancel: got %v, want true", got)
		}
		h.wantGet("k1", at(20*time.Second), true)
		h.step(10 * time.Second)
		h.wantCallsAnyOrder("at +10s", "k0=0@+10s", "k2=2@+10s", "k4=4@+10s")
		h.step(10 * time.Second)
		h.wantCallsAnyOrder("at +20s", "k0=0@+10s", "k2=2@+10s", "k4=4@+10s", "k1=11@+20s")
		h.step(time.Hour)
		h.wantCallsAnyOrder("an hour later", "k0=0@+10s", "k2=2@+10s", "k4=4@+10s", "k1=11@+20s")
	})
}

// TestCompletionDoesNotRemoveReplacement is kube's
// TestRunningWorkerCompletionDoesNotRemoveReplacement (PR 141568), and the same with a
// failing first attempt, which must not be retried either.
func TestCompletionDoesNotRemoveReplacement(t *testing.T) {
	for _, tc := range []struct {
		name       string
		firstErr   error
		wantEvents []string
	}{
		{"first attempt succeeds", nil, []string{"succeeded a #1"}},
		{"first attempt fails", errBoom, []string{"failed a #1 boom"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{Backoff: Backoff{Base: time.Second, Jitter: -1}})
				h.rec.gate("a")
				h.schedule("a", 1, epoch)
				h.start()
				h.wantCalls("after Run", "a=1@+0s")
				h.wantGet("a", time.Time{}, false)
				if got := h.schedule("a", 2, at(10*time.Second)); !got {
					t.Fatalf("Schedule while running: got %v, want true", got)
				}
				h.wantGet("a", at(10*time.Second), true)
				h.events.take()

				h.release("a", tc.firstErr)
				h.wantEvents("first attempt returns", tc.wantEvents...)
				h.wantNextAttempt("first attempt returns", "a", at(10*time.Second), true) // no retry
				h.wantLen(1)
				h.wantGet("a", at(10*time.Second), true)

				h.step(5 * time.Second) // past any retry of the first attempt
				h.wantCalls("at +5s", "a=1@+0s")
				h.step(5 * time.Second)
				h.wantCalls("at +10s", "a=1@+0s", "a=2@+10s")
				h.release("a", nil)
				h.wantEvents("replacement", "started a #1 lag=0s", "succeeded a #1")
				h.wantLen(0)
				h.step(time.Hour)
				h.wantCalls("an hour later", "a=1@+0s", "a=2@+10s")
			})
		})
	}
}

func TestCancelWhileRunning(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		wantLast string
	}{
		{"attempt succeeds", nil, "succeeded a #1"},
		{"attempt fails", errBoom, "failed a #1 boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{Backoff: Backoff{Base: time.Second, Jitter: -1}})
				h.rec.gate("a")
				h.schedule("a", 1, epoch)
				h.start()
				h.wantCalls("after Run", "a=1@+0s")
				if got := h.unschedule("a"); got {
					t.Fatalf("Cancel while running: got %v, want false", got)
				}
				h.wantGet("a", time.Time{}, false)
				h.wantLen(1) // still running
				h.events.take()
				h.release("a", tc.err)
				h.wantEvents("attempt returns", tc.wantLast)
				h.wantNextAttempt("attempt returns", "a", time.Time{}, false) // no retry
				h.wantLen(0)
				h.step(time.Hour)
				h.wantCalls("an hour later", "a=1@+0s")
				if got := h.unschedule("a"); got {
					t.Fatalf("Cancel after the attempt: got %v, want false", got)
				}
			})
		})
	}
}

func TestReplace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new time.Duration
	}{
		{"earlier", 20 * time.Second, 5 * time.Second},
		{"later", 5 * time.Second, 20 * time.Second},
		{"due now", 20 * time.Second, 0},
		{"from due to later", 0, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{})
				h.schedule("a", 1, at(tc.old))
				if got := h.schedule("a", 2, at(tc.new)); !got {
					t.Fatalf("Schedule to move: got %v, want true", got)
				}
				h.wantGet("a", at(tc.new), true)
				h.wantLen(1)
				h.start()
				if tc.new > 0 {
					h.step(tc.new - 1)
					h.wantCalls("1ns before the new time")
					h.step(1)
				}
				want := fmt.Sprintf("a=2@%s", rel(at(tc.new)))
				h.wantCalls("at the new time", want)
				h.step(time.Minute)
				h.wantCalls("past both times", want)
				h.wantEvents("all", "scheduled a "+rel(at(tc.old)), "scheduled a "+rel(at(tc.new)),
					"started a #1 lag=0s", "succeeded a #1")
			})
		})
	}
}

// TestScheduleSameTime: scheduling a pending key for the time it already has only replaces
// the value; the key keeps its place among ties and its retry state.
func TestScheduleSameTime(t *testing.T) {
	t.Run("keeps order", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Options{Workers: 1})
			h.schedule("a", 1, at(time.Second))
			h.schedule("b", 1, at(time.Second))
			if got := h.schedule("a", 2, at(time.Second)); got {
				t.Fatalf("Schedule at the same time: got %v, want false", got)
			}
			h.wantEvents("scheduling", "scheduled a +1s", "scheduled b +1s")
			h.start()
			h.step(time.Second)
			h.wantCalls("at +1s", "a=2@+1s", "b=1@+1s")
		})
	})
	t.Run("keeps retry state", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Options{Backoff: Backoff{Base: time.Second, Jitter: -1}})
			h.rec.setFail("a", errBoom)
			h.schedule("a", 1, epoch)
			h.start()
			h.wantEvents("first attempt", "scheduled a +0s", "started a #1 lag=0s", "failed a #1 boom")
			h.wantNextAttempt("first attempt", "a", at(time.Second), true)
			if got := h.schedule("a", 2, epoch); got {
				t.Fatalf("Schedule at the same time while waiting to retry: got %v, want false", got)
			}
			h.wantGet("a", epoch, true)
			h.wantNextAttempt("after Schedule", "a", at(time.Second), true)
			synctest.Wait()
			h.wantCalls("no new attempt before the retry time", "a=1@+0s")
			h.step(time.Second)
			h.wantCalls("at the retry time", "a=1@+0s", "a=2@+1s")
			h.wantEvents("second attempt", "started a #2 lag=0s", "failed a #2 boom")
			h.wantNextAttempt("second attempt", "a", at(3*time.Second), true)
		})
	})
	t.Run("another time resets retry state", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Options{Backoff: Backoff{Base: time.Second, Jitter: -1}})
			h.rec.setFail("a", errBoom)
			h.schedule("a", 1, epoch)
			h.start()
			h.events.take()
			if got := h.schedule("a", 2, at(time.Nanosecond)); !got {
				t.Fatalf("Schedule at another time while waiting to retry: got %v, want true", got)
			}
			h.step(time.Nanosecond)
			h.wantCalls("at the new time", "a=1@+0s", "a=2@+1ns")
			h.wantEvents("new scheduling", "scheduled a +1ns", "started a #1 lag=0s", "failed a #1 boom")
			h.wantNextAttempt("new scheduling", "a", at(time.Second+time.Nanosecond), true)
		})
	})
	t.Run("running key", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Options{Backoff: Backoff{Base: time.Second, Jitter: -1}})
			h.rec.gate("a")
			h.schedule("a", 1, epoch)
			h.start()
			if got := h.schedule("a", 2, epoch); got {
				t.Fatalf("Schedule of a running key at its time: got %v, want false", got)
			}
			h.wantGet("a", time.Time{}, false)
			h.release("a", errBoom) // retried, with the new value
			h.step(time.Second)
			h.wantCalls("after the retry", "a=1@+0s", "a=2@+1s")
			h.release("a", nil)
			h.wantLen(0)
		})
	})
}

func TestScheduleReportsChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		h.rec.gate("r")
		h.schedule("r", 0, epoch)
		h.start() // r is running, for epoch
		for _, tc := range []struct {
			name  string
			key   string
			value int
			at    time.Time
			want  bool
		}{
			{"new key", "a", 1, at(time.Minute), true},
			{"same time, same value", "a", 1, at(time.Minute), false},
			{"same time, new value", "a", 2, at(time.Minute), false},
			{"earlier", "a", 3, at(time.Second), true},
			{"later", "a", 4, at(time.Hour), true},
			{"running key, its time", "r", 1, epoch, false},
			{"running key, another time", "r", 2, at(time.Minute), true},
			{"running key, pending again, same time", "r", 3, at(time.Minute), false},
		} {
			if got := h.schedule(tc.key, tc.value, tc.at); got != tc.want {
				t.Errorf("%s: Schedule(%s, %d, %s): got %v, want %v", tc.name, tc.key, tc.value, rel(tc.at), got, tc.want)
			}
		}
		v, when, ok := h.q.Get("a")
		if v != 4 || !when.Equal(at(time.Hour)) || !ok {
			t.Errorf("Get(a): got %d, %s, %v, want 4, +1h0m0s, true", v, rel(when), ok)
		}
		h.release("r", nil)
		h.step(time.Minute)
		h.wantCalls("at +1m", "r=0@+0s", "r=3@+1m0s")
		h.release("r", nil)
	})
}

// TestOrder: due work starts in deadline order, ties in the order they were scheduled.
func TestOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Workers: 1})
		for _, s := range []struct {
			key string
			d   time.Duration
		}{
			{"c", 3 * time.Second}, {"t1", time.Second}, {"b", 2 * time.Second},
			{"t2", time.Second}, {"early", time.Millisecond}, {"t3", time.Second},
			{"moved", time.Hour},
		} {
			h.schedule(s.key, 0, at(s.d))
		}
		h.schedule("moved", 0, at(time.Second)) // a tie scheduled last runs last among ties
		h.start()
		h.step(5 * time.Second)
		h.wantCalls("all due at once",
			"early=0@+5s", "t1=0@+5s", "t2=0@+5s", "t3=0@+5s", "moved=0@+5s", "b=0@+5s", "c=0@+5s")
	})
}

// TestPerKeySerialization: a key scheduled again, due, while it runs waits for the running
// attempt, even when other workers are free.
func TestPerKeySerialization(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Workers: 4})
		h.rec.gate("a")
		h.schedule("a", 1, epoch)
		h.start()
		h.step(time.Second)
		h.schedule("a", 2, at(time.Second)) // due now
		h.schedule("b", 1, at(time.Second))
		synctest.Wait()
		h.wantCalls("while a runs", "a=1@+0s", "b=1@+1s")
		h.wantGet("a", at(time.Second), true)
		h.wantLen(1) // a: running and pending
		if err := h.q.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		h.release("a", nil)
		h.wantCalls("after a's first attempt", "a=1@+0s", "b=1@+1s", "a=2@+1s")
		h.wantKeyEvents("all", "a",
			"scheduled a +0s", "started a #1 lag=0s", "scheduled a +1s",
			"succeeded a #1", "started a #1 lag=0s")
		// Moved again while parked: the parked generation is dropped.
		h.schedule("a", 3, at(time.Minute))
		h.release("a", nil)
		h.step(time.Minute)
		h.wantCalls("after the move", "a=1@+0s", "b=1@+1s", "a=2@+1s", "a=3@+1m1s")
		h.release("a", nil)
		h.wantLen(0)
	})
}

// TestParkedCancel: a key that came due while running, then was cancelled, does not run.
func TestParkedCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Workers: 2})
		h.rec.gate("a")
		h.schedule("a", 1, epoch)
		h.start()
		h.schedule("a", 2, at(time.Second))
		h.step(time.Second) // due, parked behind the running attempt
		if got := h.unschedule("a"); !got {
			t.Fatalf("Cancel of parked work: got %v, want true", got)
		}
		h.release("a", nil)
		h.step(time.Hour)
		h.wantCalls("after the cancel", "a=1@+0s")
		h.wantLen(0)
	})
}

func TestRetryBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Backoff: Backoff{Base: time.Second, Cap: 5 * time.Second, Jitter: -1}})
		h.rec.setFail("a", errBoom)
		h.schedule("a", 1, epoch)
		h.start()
		var gotRetry []string // the retry time after each failed attempt
		retryAt := func() {
			next, _ := h.q.nextAttempt("a")
			gotRetry = append(gotRetry, rel(next))
		}
		retryAt()
		now := time.Duration(0)
		want := []string{"a=1@+0s"}
		for i, d := range []time.Duration{1, 2, 4, 5, 5, 5} {
			d *= time.Second
			h.step(d - 1)
			h.wantCalls(fmt.Sprintf("retry %d, 1ns early", i+1), want...)
			h.step(1)
			now += d
			want = append(want, fmt.Sprintf("a=1@%s", rel(at(now))))
			h.wantCalls(fmt.Sprintf("retry %d", i+1), want...)
			retryAt()
		}
		h.wantGet("a", epoch, true) // retries keep the scheduled time
		wantRetry := []string{"+1s", "+3s", "+7s", "+12s", "+17s", "+22s", "+27s"}
		if fmt.Sprint(gotRetry) != fmt.Sprint(wantRetry) {
			t.Fatalf("retry times: got %v, want %v", gotRetry, wantRetry)
		}
		h.rec.setFail("a", nil)
		h.step(5 * time.Second)
		h.wantLen(0)
	})
}

// TestRetryJitter: with the default jitter, a retry waits d·(1−0.2) to d.
func TestRetryJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBareHarness(t, Options{Workers: 1, Backoff: Backoff{Base: time.Second, Cap: 8 * time.Second}})
		const keys = 50
		for i := range keys {
			k := fmt.Sprint("k", i)
			h.rec.setFail(k, errBoom)
			h.schedule(k, i, epoch)
		}
		// Each attempt fails at the fake clock's time of the step that ran it, and a key
		// fails at most once a step (a retry waits at least 0.8 s): a key's next attempt
		// that has changed since the last step is the retry of a failure at this one.
		retries := map[string][]time.Duration{}
		last := map[string]time.Time{}
		collect := func() {
			now := h.clk.Now()
			for i := range keys {
				k := fmt.Sprint("k", i)
				if next, ok := h.q.nextAttempt(k); ok && !next.Equal(last[k]) {
					retries[k] = append(retries[k], next.Sub(now))
					last[k] = next
				}
			}
		}
		h.start()
		collect()
		for range 60 {
			h.step(time.Second)
			collect()
		}
		distinct := map[time.Duration]bool{}
		for k, ds := range retries {
			if len(ds) < 6 {
				t.Fatalf("%s: got %d retries, want at least 6", k, len(ds))
			}
			for i, d := range ds {
				nominal := min(time.Second<<i, 8*time.Second)
				lo := time.Duration(float64(nominal) * (1 - DefaultJitter))
				if d < lo || d > nominal {
					t.Errorf("%s retry %d: got delay %v, want within [%v, %v]", k, i+1, d, lo, nominal)
				}
				distinct[d] = true
			}
		}
		if len(distinct) < keys {
			t.Errorf("distinct delays: got %d, want at least %d (jitter spreads retries)", len(distinct), keys)
		}
		for i := range keys {
			h.rec.setFail(fmt.Sprint("k", i), nil)
		}
		h.step(10 * time.Second)
		h.wantLen(0)
	})
}

func TestMaxAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Backoff: Backoff{Base: time.Second, Jitter: -1, MaxAttempts: 3}})
		h.rec.setFail("a", errBoom)
		h.schedule("a", 1, epoch)
		h.start()
		h.wantNextAttempt("after attempt 1", "a", at(time.Second), true)
		h.step(time.Second)
		h.wantNextAttempt("after attempt 2", "a", at(3*time.Second), true)
		h.step(2 * time.Second)
		h.wantNextAttempt("after attempt 3", "a", time.Time{}, false) // no retry
		h.wantCalls("three attempts", "a=1@+0s", "a=1@+1s", "a=1@+3s")
		h.wantEvents("all",
			"scheduled a +0s",
			"started a #1 lag=0s", "failed a #1 boom",
			"started a #2 lag=0s", "failed a #2 boom",
			"started a #3 lag=0s", "failed a #3 boom")
		h.wantLen(0)
		h.wantGet("a", time.Time{}, false)
		h.step(time.Hour)
		h.wantCalls("an hour later", "a=1@+0s", "a=1@+1s", "a=1@+3s")
		// A new scheduling starts a new count.
		h.schedule("a", 2, at(time.Hour+5*time.Second))
		h.step(5 * time.Second)
		h.step(time.Second)
		h.step(2 * time.Second)
		h.wantLen(0)
		if got := len(h.rec.got()); got != 6 {
			t.Fatalf("attempts after rescheduling: got %d calls in all, want 6", got)
		}
	})
}

// TestEvents: what the queue does, as the harness's wrappers of Schedule, Cancel and the
// work function see it, and the retry times it sets.
func TestEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Backoff: Backoff{Base: time.Second, Jitter: -1}})
		h.rec.setFail("f", errBoom)
		h.schedule("a", 1, at(10*time.Second))
		h.schedule("a", 2, at(10*time.Second)) // changes nothing but the value: no event
		h.schedule("b", 1, at(5*time.Second))
		h.unschedule("b")
		h.unschedule("b") // removed nothing: no event
		h.unschedule("x")
		h.schedule("f", 1, at(10*time.Second))
		h.wantEvents("before Run",
			"scheduled a +10s", "scheduled b +5s", "cancelled b", "scheduled f +10s")
		h.start()
		h.step(12 * time.Second)
		h.wantNextAttempt("after f's first attempt", "f", at(13*time.Second), true)
		got := h.events.take()
		// a and f may run on two workers in either order; check each key's sequence.
		want := map[string][]string{
			"a": {"started a #1 lag=2s", "succeeded a #1"},
			"f": {"started f #1 lag=2s", "failed f #1 boom"},
		}
		for k, w := range want {
			var g []string
			for _, e := range got {
				if strings.Fields(e)[1] == k {
					g = append(g, e)
				}
			}
			if fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("events of %s: got %q, want %q", k, g, w)
			}
		}
		if len(got) != 4 {
			t.Errorf("events: got %q, want 4", got)
		}
		h.step(3 * time.Second) // the retry is 2s late
		h.wantEvents("retry", "started f #2 lag=2s", "failed f #2 boom")
		h.wantNextAttempt("after f's retry", "f", at(17*time.Second), true)
		h.unschedule("f")
		h.wantEvents("cancel of a key waiting to retry", "cancelled f")
		h.schedule("z", 0, time.Time{})
		synctest.Wait()
		ev := h.events.take()
		if len(ev) != 3 || ev[0] != "scheduled z zero" || !strings.HasPrefix(ev[1], "started z #1 lag=") || ev[2] != "succeeded z #1" {
			t.Errorf("zero time: got %q, want scheduled, started, succeeded", ev)
		}
	})
}

// TestZeroTimeLag: work scheduled at the zero time runs at once and reports no lag, not the
// 292 years since the zero time.
func TestZeroTimeLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		h.start()
		h.schedule("a", 1, time.Time{})
		synctest.Wait()
		h.wantCalls("after scheduling at the zero time", "a=1@+0s")
		h.wantKeyEvents("after scheduling at the zero time", "a", "scheduled a zero", "started a #1 lag=0s", "succeeded a #1")
	})
}

func TestPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Backoff: Backoff{Base: time.Second, Jitter: -1}})
		h.rec.setPanic("a", "kaboom")
		h.schedule("a", 1, epoch)
		h.start()
		h.wantNextAttempt("after the panic", "a", at(time.Second), true)
		h.step(time.Second)
		h.wantCalls("panic, then retry", "a=1@+0s", "a=1@+1s")
		h.wantEvents("all", "scheduled a +0s",
			"started a #1 lag=0s", "panicked a #1",
			"started a #2 lag=0s", "succeeded a #2")
		h.wantLen(0)

		// The error a worker records for the attempt is what call returns.
		rec := newRecorder(h.clk)
		rec.setPanic("b", "kaboom")
		q, err := New(rec.work, Options{Clock: h.clk})
		if err != nil {
			t.Fatal(err)
		}
		err = q.call(context.Background(), "b", 1)
		var pe *PanicError
		if !errors.As(err, &pe) {
			t.Fatalf("call's error: got %v, want a *PanicError", err)
		}
		if got, want := err.Error(), "timedqueue: work panicked: kaboom"; got != want {
			t.Errorf("call's error: got %q, want %q", got, want)
		}
		if pe.Value != "kaboom" {
			t.Errorf("PanicError.Value: got %v, want kaboom", pe.Value)
		}
		if !strings.Contains(string(pe.Stack), "(*recorder).work") {
			t.Errorf("PanicError.Stack: got %q, want the work function's frame", pe.Stack)
		}
	})
}

// TestShutdown: Run returns only after running work returns; the work sees its ctx done;
// pending work stays.
func TestShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		h.rec.gate("a")
		h.schedule("a", 1, epoch)
		h.schedule("later", 2, at(time.Hour))
		h.start()
		h.cancel()
		synctest.Wait()
		select {
		case err := <-h.done:
			t.Fatalf("Run returned %v while work was running", err)
		default:
		}
		h.wantLen(2)
		h.rec.gate("a") <- nil
		synctest.Wait()
		select {
		case err := <-h.done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: got %v, want context.Canceled", err)
			}
		default:
			t.Fatal("Run did not return after the running work returned")
		}
		h.cancel = nil
		h.rec.mu.Lock()
		sawDone := h.rec.ctxDone["a"]
		h.rec.mu.Unlock()
		if !sawDone {
			t.Error("work's ctx: got not done when it returned, want done")
		}
		h.wantLen(1)
		h.wantGet("later", at(time.Hour), true)
		h.step(2 * time.Hour)
		h.wantCalls("after Run returned", "a=1@+0s")
		// Schedule, Cancel, Len and Get still work after Run.
		h.schedule("x", 1, epoch)
		h.wantLen(2)
		if !h.unschedule("later") {
			t.Error("Cancel after Run: got false, want true")
		}
		if err := h.q.Run(context.Background()); !errors.Is(err, ErrRunTwice) {
			t.Errorf("Run after Run: got %v, want ErrRunTwice", err)
		}
	})
}

// TestNoStartAfterCancel: once Run's ctx is done, no work starts, even work that is due.
// The race is between the dispatcher noticing ctx and a worker that returns from an attempt
// and takes the next due item; the scenario is repeated to make it likely.
func TestNoStartAfterCancel(t *testing.T) {
	for i := range 50 {
		synctest.Test(t, func(t *testing.T) {
			h := newBareHarness(t, Options{Workers: 1})
			ctx, cancel := context.WithCancel(context.Background())
			var lateStarts []string
			work := func(ctx context.Context, key string, _ int) error {
				if key == "a" {
					cancel() // Run is stopped while a runs; a returns at once
				}
				h.rec.mu.Lock()
				h.rec.calls = append(h.rec.calls, call{Key: key, At: h.clk.Now()})
				if ctx.Err() != nil && key != "a" {
					lateStarts = append(lateStarts, key)
				}
				h.rec.mu.Unlock()
				return nil
			}
			h.q.work = work
			h.schedule("a", 0, epoch)
			h.schedule("b", 0, epoch)
			done := make(chan error)
			go func() { done <- h.q.Run(ctx) }()
			<-done
			h.rec.mu.Lock()
			defer h.rec.mu.Unlock()
			if len(lateStarts) > 0 || len(h.rec.calls) != 1 {
				t.Fatalf("iteration %d: calls %v, started with ctx done %v; want only a (b must not start once ctx is done)", i, h.rec.calls, lateStarts)
			}
		})
	}
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		h.start()
		if err := h.q.Run(context.Background()); !errors.Is(err, ErrRunTwice) {
			t.Fatalf("second Run while the first runs: got %v, want ErrRunTwice", err)
		}
		if err := h.stop(); !errors.Is(err, context.Canceled) {
			t.Fatalf("first Run: got %v, want context.Canceled", err)
		}
		if err := h.q.Run(context.Background()); !errors.Is(err, ErrRunTwice) {
			t.Fatalf("Run after the first returned: got %v, want ErrRunTwice", err)
		}
	})
}

func TestNew(t *testing.T) {
	work := func(context.Context, string, int) error { return nil }
	for _, tc := range []struct {
		name    string
		work    WorkFunc[string, int]
		opts    Options
		wantErr string // "" for success
	}{
		{"zero options", work, Options{}, ""},
		{"nil work", nil, Options{}, "timedqueue: "},
		{"negative workers", work, Options{Workers: -1}, "timedqueue: "},
		{"negative base", work, Options{Backoff: Backoff{Base: -1}}, "timedqueue: "},
		{"negative cap", work, Options{Backoff: Backoff{Cap: -1}}, "timedqueue: "},
		{"negative max attempts", work, Options{Backoff: Backoff{MaxAttempts: -1}}, "timedqueue: "},
		{"jitter above 1", work, Options{Backoff: Backoff{Jitter: 1.5}}, "timedqueue: "},
		{"jitter 1", work, Options{Backoff: Backoff{Jitter: 1}}, ""},
		{"jitter off", work, Options{Backoff: Backoff{Jitter: -1}}, ""},
		{"one worker", work, Options{Workers: 1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := New(tc.work, tc.opts)
			if tc.wantErr == "" {
				if err != nil || q == nil {
					t.Fatalf("New: got %v, %v, want a queue and no error", q, err)
				}
				return
			}
			if err == nil || q != nil {
				t.Fatalf("New: got %v, %v, want no queue and an error", q, err)
			}
			if !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Fatalf("New: got error %q, want prefix %q", err, tc.wantErr)
			}
		})
	}
	q, _ := New(work, Options{})
	if got, want := len(q.batches), DefaultWorkers; got != want {
		t.Errorf("default workers: got %d, want %d", got, want)
	}
	if got, want := q.backoff, (Backoff{Base: DefaultBackoffBase, Cap: DefaultBackoffCap, Jitter: DefaultJitter}); got != want {
		t.Errorf("default backoff: got %+v, want %+v", got, want)
	}
}

func TestTimes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		at      time.Time
		wantAt  time.Time // what Get returns
		wantRun bool      // at Run, before any step
	}{
		{"zero time", time.Time{}, time.Time{}, true},
		{"year 1000", time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), minTime, true},
		{"unix epoch", time.Unix(0, 0), time.Unix(0, 0), true},
		{"1ns ago", epoch.Add(-1), epoch.Add(-1), true},
		{"now", epoch, epoch, true},
		{"1ns ahead", epoch.Add(1), epoch.Add(1), false},
		{"year 3000", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), maxTime, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{})
				h.schedule("a", 1, tc.at)
				h.wantGet("a", tc.wantAt, true)
				h.start()
				if got := len(h.rec.got()) == 1; got != tc.wantRun {
					t.Fatalf("ran at once: got %v, want %v", got, tc.wantRun)
				}
			})
		})
	}
	t.Run("beyond 2262 never runs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Options{})
			h.schedule("a", 1, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
			h.start()
			for range 20 {
				h.step(10 * 365 * 24 * time.Hour) // to 2229
			}
			h.wantCalls("200 years later")
			h.wantGet("a", maxTime, true)
			h.unschedule("a")
		})
	})
	if got := maxTime.Year(); got != 2262 {
		t.Errorf("maxTime.Year(): got %d, want 2262", got)
	}
}

func TestLen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		h.wantLen(0)
		h.rec.gate("run")
		h.schedule("run", 0, epoch)
		h.schedule("wait", 0, at(time.Minute))
		h.wantLen(2)
		h.start()
		h.wantLen(2) // one running, one pending
		h.schedule("run", 1, at(time.Minute))
		h.wantLen(2) // running and pending again count once
		h.unschedule("wait")
		h.wantLen(1)
		h.release("run", nil)
		h.wantLen(1)
		h.step(time.Minute)
		h.wantLen(1)
		h.release("run", nil)
		h.wantLen(0)
	})
}

func TestGetAndPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Backoff: Backoff{Base: time.Hour, Jitter: -1}})
		if _, _, ok := h.q.Get("a"); ok {
			t.Fatal("Get of an unknown key: got ok, want not ok")
		}
		h.rec.gate("run")
		h.rec.setFail("retry", errBoom)
		h.schedule("run", 1, epoch)
		h.schedule("retry", 2, epoch)
		h.schedule("c", 3, at(3*time.Second))
		h.schedule("a", 4, at(time.Second))
		h.schedule("b", 5, at(2*time.Second))
		h.schedule("gone", 6, at(2*time.Second))
		h.unschedule("gone")
		h.start() // run is running, retry waits to retry at +1h
		if _, _, ok := h.q.Get("run"); ok {
			t.Error("Get of a running key: got ok, want not ok")
		}
		v, when, ok := h.q.Get("retry")
		if v != 2 || !when.Equal(epoch) || !ok {
			t.Errorf("Get(retry): got %d, %s, %v, want 2, +0s, true", v, rel(when), ok)
		}
		var got []string
		for _, e := range h.q.Pending() {
			got = append(got, fmt.Sprintf("%s=%d@%s", e.Key, e.Value, rel(e.At)))
		}
		want := []string{"retry=2@+0s", "a=4@+1s", "b=5@+2s", "c=3@+3s"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Pending: got %v, want %v", got, want)
		}
		h.release("run", nil)
		h.unschedule("retry")
		h.step(3 * time.Second)
		if p := h.q.Pending(); len(p) != 0 {
			t.Errorf("Pending after all ran: got %v, want none", p)
		}
	})
}

// TestBoundedPool: with 3 workers and 10 due items that block, exactly 3 run at once.
func TestBoundedPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Workers: 3})
		for i := range 10 {
			k := fmt.Sprint("k", i)
			h.rec.gate(k)
			h.schedule(k, i, epoch)
		}
		h.start()
		wantRunning := func(when string, want int) {
			t.Helper()
			h.rec.mu.Lock()
			defer h.rec.mu.Unlock()
			if h.rec.running != want {
				t.Fatalf("%s: running: got %d, want %d", when, h.rec.running, want)
			}
		}
		wantRunning("at Run", 3)
		h.wantCallsAnyOrder("at Run", "k0=0@+0s", "k1=1@+0s", "k2=2@+0s")
		for i := range 10 {
			h.release(fmt.Sprint("k", i), nil)
			wantRunning(fmt.Sprintf("after k%d returned", i), min(3, 10-i-1))
		}
		h.rec.mu.Lock()
		if h.rec.maxRunning != 3 {
			t.Errorf("most running at once: got %d, want 3", h.rec.maxRunning)
		}
		h.rec.mu.Unlock()
		h.wantLen(0)
	})
}

// TestBareWork: the queue runs, fails, panics and retries work that the harness does not
// wrap, whose calls do not look into the queue (as work outside these tests does not).
func TestBareWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBareHarness(t, Options{Backoff: Backoff{Base: time.Second, Jitter: -1}})
		h.rec.setPanic("p", "x")
		h.rec.setFail("f", errBoom)
		h.schedule("p", 1, epoch)
		h.schedule("f", 2, epoch)
		h.schedule("ok", 3, at(time.Second))
		h.unschedule("none")
		h.start()
		h.rec.setFail("f", nil)
		h.step(time.Second)
		h.wantLen(0)
		if got := len(h.rec.got()); got != 5 {
			t.Fatalf("calls: got %v, want p, f, then retries of both and ok", h.rec.got())
		}
	})
}

// TestTimesInClockLocation: the times Get and Pending return are in the location of the
// clock's times (UTC for a UTC clock), whatever the location of the time scheduled, and
// not in time.Local.
func TestTimesInClockLocation(t *testing.T) {
	east := time.FixedZone("UTC+3", 3*60*60)
	for _, loc := range []*time.Location{time.UTC, east} {
		t.Run(loc.String(), func(t *testing.T) {
			clk := testclock.NewFakeClock(epoch.In(loc))
			q, err := New(func(context.Context, string, int) error { return nil }, Options{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			when := time.Date(2030, 6, 1, 12, 0, 0, 0, time.FixedZone("UTC-7", -7*60*60))
			q.Schedule("a", 1, when)
			p := q.Pending()
			if len(p) != 1 || p[0].At.Location() != loc || !p[0].At.Equal(when) {
				t.Fatalf("Pending: got %v, want one entry at %v in %v", p, when, loc)
			}
			if _, got, _ := q.Get("a"); got.Location() != loc || !got.Equal(when) {
				t.Errorf("Get: got %v, want %v in %v", got, when, loc)
			}
			q.Schedule("zero", 2, time.Time{})
			if _, got, _ := q.Get("zero"); !got.IsZero() {
				t.Errorf("Get of a key scheduled at the zero time: got %v, want the zero time", got)
			}
		})
	}
}

// TestScheduleEarlier: ScheduleEarlier moves pending work earlier, never later, and
// schedules a key that has none, as Schedule does.
func TestScheduleEarlier(t *testing.T) {
	for _, tc := range []struct {
		name    string
		old     time.Duration // 0: nothing pending
		new     time.Duration
		changed bool
		want    time.Duration
	}{
		{"nothing pending", 0, 10 * time.Second, true, 10 * time.Second},
		{"pending later: moved earlier", 20 * time.Second, 5 * time.Second, true, 5 * time.Second},
		{"pending earlier: left as it is", 5 * time.Second, 20 * time.Second, false, 5 * time.Second},
		{"pending at the same time: left as it is", 5 * time.Second, 5 * time.Second, false, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{})
				if tc.old != 0 {
					h.schedule("a", 1, at(tc.old))
				}
				if got := h.q.ScheduleEarlier("a", 2, at(tc.new)); got != tc.changed {
					t.Errorf("ScheduleEarlier: got %v, want %v", got, tc.changed)
				}
				h.wantGet("a", at(tc.want), true)
				h.start()
				h.step(tc.want)
				value := 2
				if !tc.changed {
					value = 1
				}
				h.wantCalls("at the time kept", fmt.Sprintf("a=%d@%s", value, rel(at(tc.want))))
			})
		})
	}
}
