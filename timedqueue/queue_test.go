package timedqueue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
// TestRunningWorkerCompletionDoesNotRemoveReplacement (PR 141568): work scheduled for a key
// while it runs is not removed when the running call returns.
func TestCompletionDoesNotRemoveReplacement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
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

		h.release("a")
		h.wantEvents("first call returns", "returned a")
		h.wantLen(1)
		h.wantGet("a", at(10*time.Second), true)

		h.step(5 * time.Second)
		h.wantCalls("at +5s", "a=1@+0s")
		h.step(5 * time.Second)
		h.wantCalls("at +10s", "a=1@+0s", "a=2@+10s")
		h.release("a")
		h.wantEvents("replacement", "started a", "returned a")
		h.wantLen(0)
		h.step(time.Hour)
		h.wantCalls("an hour later", "a=1@+0s", "a=2@+10s")
	})
}

func TestCancelWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
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
		h.release("a")
		h.wantEvents("call returns", "returned a")
		h.wantLen(0)
		h.step(time.Hour)
		h.wantCalls("an hour later", "a=1@+0s")
		if got := h.unschedule("a"); got {
			t.Fatalf("Cancel after the call: got %v, want false", got)
		}
	})
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
					"started a", "returned a")
			})
		})
	}
}

// TestScheduleSameTime: scheduling a pending key for the time it already has only replaces
// the value, and the key keeps its place among ties; scheduling a running key with nothing
// pending schedules it, whatever the time.
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
	t.Run("running key", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Options{})
			h.rec.gate("a")
			h.schedule("a", 1, epoch)
			h.start()
			if got := h.schedule("a", 2, epoch); !got {
				t.Fatalf("Schedule of a running key at the time it runs for: got %v, want true", got)
			}
			h.wantGet("a", epoch, true)
			h.release("a") // runs again, with the new value
			h.wantCalls("after the first call", "a=1@+0s", "a=2@+0s")
			h.release("a")
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
			{"running key, its time", "r", 1, epoch, true},
			{"running key, pending again, another time", "r", 2, at(time.Minute), true},
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
		h.release("r")
		h.step(time.Minute)
		h.wantCalls("at +1m", "r=0@+0s", "r=3@+1m0s")
		h.release("r")
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
// call, even when other workers are free.
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
		h.release("a")
		h.wantCalls("after a's first call", "a=1@+0s", "b=1@+1s", "a=2@+1s")
		h.wantKeyEvents("all", "a",
			"scheduled a +0s", "started a", "scheduled a +1s", "returned a", "started a")
		// Moved while it runs: the work it was scheduled for before is dropped.
		h.schedule("a", 3, at(time.Minute))
		h.release("a")
		h.step(time.Minute)
		h.wantCalls("after the move", "a=1@+0s", "b=1@+1s", "a=2@+1s", "a=3@+1m1s")
		h.release("a")
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
		h.step(time.Second) // due, parked behind the running call
		if got := h.unschedule("a"); !got {
			t.Fatalf("Cancel of parked work: got %v, want true", got)
		}
		h.release("a")
		h.step(time.Hour)
		h.wantCalls("after the cancel", "a=1@+0s")
		h.wantLen(0)
	})
}

// TestEvents: what the queue does, as the harness's wrappers of Schedule, Cancel and the
// work function see it.
func TestEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
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
		got := h.events.take()
		// a and f may run on two workers in either order; check each key's sequence.
		for _, k := range []string{"a", "f"} {
			var g []string
			for _, e := range got {
				if strings.Fields(e)[1] == k {
					g = append(g, e)
				}
			}
			if w := []string{"started " + k, "returned " + k}; fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("events of %s: got %q, want %q", k, g, w)
			}
		}
		if len(got) != 4 {
			t.Errorf("events: got %q, want 4", got)
		}
		h.wantCallsAnyOrder("at +12s", "a=2@+12s", "f=1@+12s")
		h.schedule("z", 0, time.Time{})
		synctest.Wait()
		h.wantEvents("zero time", "scheduled z zero", "started z", "returned z")
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
		h.rec.gate("a") <- struct{}{}
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
// The race is between Run noticing ctx and a worker that returns from a call
// and takes the next due item; the scenario is repeated to make it likely.
func TestNoStartAfterCancel(t *testing.T) {
	for i := range 50 {
		synctest.Test(t, func(t *testing.T) {
			h := newBareHarness(t, Options{Workers: 1})
			ctx, cancel := context.WithCancel(context.Background())
			var lateStarts []string
			work := func(ctx context.Context, key string, _ int) {
				if key == "a" {
					cancel() // Run is stopped while a runs; a returns at once
				}
				h.rec.mu.Lock()
				h.rec.calls = append(h.rec.calls, call{Key: key, At: h.clk.Now()})
				if ctx.Err() != nil && key != "a" {
					lateStarts = append(lateStarts, key)
				}
				h.rec.mu.Unlock()
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
	work := func(context.Context, string, int) {}
	for _, tc := range []struct {
		name    string
		work    WorkFunc[string, int]
		opts    Options
		wantErr string // "" for success
	}{
		{"zero options", work, Options{}, ""},
		{"nil work", nil, Options{}, "timedqueue: "},
		{"negative workers", work, Options{Workers: -1}, "timedqueue: "},
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
	if got, want := q.Workers(), DefaultWorkers; got != want {
		t.Errorf("default workers: got %d, want %d", got, want)
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
		h.release("run")
		h.wantLen(1)
		h.step(time.Minute)
		h.wantLen(1)
		h.release("run")
		h.wantLen(0)
	})
}

func TestGetAndPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		if _, _, ok := h.q.Get("a"); ok {
			t.Fatal("Get of an unknown key: got ok, want not ok")
		}
		h.rec.gate("run")
		h.rec.gate("again")
		h.schedule("run", 1, epoch)
		h.schedule("again", 2, epoch)
		h.schedule("c", 3, at(3*time.Second))
		h.schedule("a", 4, at(time.Second))
		h.schedule("b", 5, at(2*time.Second))
		h.schedule("gone", 6, at(2*time.Second))
		h.schedule("b2", 7, at(2*time.Second))
		h.unschedule("gone")
		h.start()                     // run and again are running
		h.schedule("again", 8, epoch) // due while it runs: waits for that call
		if _, _, ok := h.q.Get("run"); ok {
			t.Error("Get of a running key: got ok, want not ok")
		}
		v, when, ok := h.q.Get("again")
		if v != 8 || !when.Equal(epoch) || !ok {
			t.Errorf("Get(again): got %d, %s, %v, want 8, +0s, true", v, rel(when), ok)
		}
		var got []string
		for _, e := range h.q.Pending() {
			got = append(got, fmt.Sprintf("%s=%d@%s", e.Key, e.Value, rel(e.At)))
		}
		want := []string{"again=8@+0s", "a=4@+1s", "b=5@+2s", "b2=7@+2s", "c=3@+3s"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Pending: got %v, want %v", got, want)
		}
		h.release("run")
		h.unschedule("again")
		h.release("again")
		h.step(3 * time.Second)
		if p := h.q.Pending(); len(p) != 0 {
			t.Errorf("Pending after all ran: got %v, want none", p)
		}
		h.wantCallsAnyOrder("all", "run=1@+0s", "again=2@+0s", "a=4@+3s", "b=5@+3s", "b2=7@+3s", "c=3@+3s")
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
			h.release(fmt.Sprint("k", i))
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

// TestTimesInClockLocation: the times Get and Pending return are in the location of the
// clock's times (UTC for a UTC clock), whatever the location of the time scheduled, and
// not in time.Local.
func TestTimesInClockLocation(t *testing.T) {
	east := time.FixedZone("UTC+3", 3*60*60)
	for _, loc := range []*time.Location{time.UTC, east} {
		t.Run(loc.String(), func(t *testing.T) {
			clk := testclock.NewFakeClock(epoch.In(loc))
			q, err := New(func(context.Context, string, int) {}, Options{Clock: clk})
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

// TestRetryByRescheduling: the queue does not retry; a work function that wants another
// try schedules its own key again, which runs once the call has returned.
func TestRetryByRescheduling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newBareHarness(t, Options{Workers: 4})
		tries := 0
		h.q.work = func(ctx context.Context, key string, try int) {
			h.rec.work(ctx, key, try)
			tries++ // one call of key at a time: no lock needed
			if try < 3 {
				h.q.Schedule(key, try+1, h.clk.Now().Add(time.Duration(try)*time.Second))
			}
		}
		h.schedule("a", 1, epoch)
		h.start()
		h.step(time.Second)
		h.step(2 * time.Second)
		h.step(time.Hour)
		h.wantCalls("three tries", "a=1@+0s", "a=2@+1s", "a=3@+3s")
		h.wantLen(0)
	})
}

// TestDueBehindABlockedWorker: due work waiting for the one worker, which is blocked, is
// pending: Cancel removes it for good, Schedule at its time replaces its value, at another
// time moves it.
func TestDueBehindABlockedWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Workers: 1})
		h.rec.gate("a")
		for _, k := range []string{"a", "cancelled", "same", "moved", "last"} {
			h.schedule(k, 1, epoch)
		}
		h.start()
		h.wantCalls("while a blocks", "a=1@+0s")
		if !h.unschedule("cancelled") {
			t.Fatal("Cancel of due work not started: got false, want true")
		}
		if got := h.schedule("same", 2, epoch); got {
			t.Fatal("Schedule of due work at its time: got true, want false (value only)")
		}
		if got := h.schedule("moved", 3, at(time.Minute)); !got {
			t.Fatal("Schedule of due work at another time: got false, want true")
		}
		h.wantGet("same", epoch, true)
		h.wantLen(4) // a running; same, moved and last pending
		h.release("a")
		h.wantCalls("after a", "a=1@+0s", "same=2@+0s", "last=1@+0s")
		h.step(time.Minute)
		h.wantCalls("at +1m", "a=1@+0s", "same=2@+0s", "last=1@+0s", "moved=3@+1m0s")
		h.wantLen(0)
	})
}

// TestNoHeadOfLineBlocking: due work does not wait for a call that blocks while another
// worker is free, and a call that returned does not count as running behind a slow one.
func TestNoHeadOfLineBlocking(t *testing.T) {
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
		h.release("b")
		h.wantCallsAnyOrder("after b", "a=1@+0s", "b=1@+0s", "c=1@+0s", "d=1@+0s", "e=1@+0s")
		h.wantLen(1)
		h.release("a")
		h.wantLen(0)
	})
}

// TestCancelAll: cancelling every pending key, before or during Run, leaves a queue that
// works.
func TestCancelAll(t *testing.T) {
	for _, n := range []int{1, 64, 5000} {
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
					for i := range n {
						if !h.unschedule(fmt.Sprint("k", i)) {
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

// TestLargeDrain: 20k keys, 19k of them run at once or are cancelled; the map and the
// heap are rebuilt small, and the 1k that remain run at their times, with their values.
func TestLargeDrain(t *testing.T) {
	for _, how := range []string{"run", "cancel"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { largeDrain(t, how == "cancel") })
		})
	}
}

func largeDrain(t *testing.T, cancel bool) {
	h := newBareHarness(t, Options{})
	r := rand.New(rand.NewPCG(8, 8))
	const n, keep = 20000, 1000
	var want []string
	for i := range n {
		k := fmt.Sprint("k", i)
		d := time.Second
		if i%(n/keep) == 0 {
			d = time.Duration(2+r.IntN(999)) * time.Second // [2s, 1000s]
			want = append(want, fmt.Sprintf("%s=%d@%s", k, i, rel(at(d))))
		}
		h.schedule(k, i, at(d))
		if cancel && d == time.Second {
			h.unschedule(k)
		}
	}
	h.start()
	h.step(time.Second)
	h.wantLen(keep)
	h.q.mu.Lock()
	peak, heapCap := h.q.peak, cap(h.q.heap)
	h.q.mu.Unlock()
	if peak > 4*keep || heapCap > 4*keep {
		t.Errorf("after the drain: peak %d, heap capacity %d, want both rebuilt below %d", peak, heapCap, 4*keep)
	}
	for now := time.Second; now < 1000*time.Second; now += time.Second {
		h.step(time.Second)
	}
	var got []string
	for _, c := range h.rec.got() {
		if !strings.HasSuffix(c, "@+1s") {
			got = append(got, c)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("calls after the drain: got %d, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	h.wantLen(0)
}

func TestUntil(t *testing.T) {
	for _, tc := range []struct {
		at, now int64
		want    time.Duration
	}{
		{5, 3, 2},
		{maxNanos, 0, math.MaxInt64},
		{maxNanos, minNanos, math.MaxInt64},
		{0, minNanos, math.MaxInt64},
		{-1, minNanos, math.MaxInt64 - 1},
		{epoch.UnixNano(), epoch.UnixNano() - 1, 1},
	} {
		if got := until(tc.at, tc.now); got != tc.want {
			t.Errorf("until(%d, %d): got %d, want %d", tc.at, tc.now, got, tc.want)
		}
	}
}

// TestIndexSharedHash: keys whose hashes are equal (about once in 2^64: forced here) share
// one map entry in a chain; each is found, and each is dropped without the others.
func TestIndexSharedHash(t *testing.T) {
	q, err := New(func(context.Context, string, int) {}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const h = 42
	keys := []string{"a", "b", "c", "d"}
	byKey := map[string]*entry[string, int]{}
	for _, k := range keys {
		byKey[k] = &entry[string, int]{key: k, index: -1}
		q.insert(h, byKey[k])
	}
	wantFound := func(when string, present ...string) {
		t.Helper()
		for _, k := range keys {
			want := slices.Contains(present, k)
			if got := q.lookup(h, k); (got != nil) != want || (want && got != byKey[k]) {
				t.Errorf("%s: lookup(%s): got %p, want found %v (%p)", when, k, got, want, byKey[k])
			}
		}
		if q.keys != len(present) {
			t.Errorf("%s: len: got %d, want %d", when, q.keys, len(present))
		}
	}
	wantFound("all inserted", keys...)
	for _, step := range []struct {
		drop string
		left []string
	}{
		{"b", []string{"a", "c", "d"}}, // in the middle of the chain
		{"d", []string{"a", "c"}},      // its head
		{"a", []string{"c"}},           // its tail
		{"c", nil},                     // the last
	} {
		q.drop(h, byKey[step.drop])
		wantFound("after dropping "+step.drop, step.left...)
	}
	if _, ok := q.entries[h]; ok {
		t.Error("the map keeps the hash after its last key was dropped")
	}
}

// TestOnTimeWhileACallBlocks: work due later starts on time while a call taken before it
// still runs; the timer is set for it when the call is taken.
func TestOnTimeWhileACallBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Workers: 2})
		h.rec.gate("a")
		h.schedule("a", 1, at(time.Second))
		h.schedule("b", 2, at(2*time.Second))
		h.start()
		h.step(time.Second)
		h.wantCalls("a blocks", "a=1@+1s")
		h.step(time.Second)
		h.wantCalls("b on time", "a=1@+1s", "b=2@+2s")
		h.release("a")
	})
}
