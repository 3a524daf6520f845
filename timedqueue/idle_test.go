package timedqueue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"
)

// waitIdleAsync calls WaitIdle in a goroutine and returns its result channel.
func waitIdleAsync(ctx context.Context, q *Queue[string, int]) chan error {
	done := make(chan error, 1)
	go func() { done <- q.WaitIdle(ctx) }()
	return done
}

// wantBlocked fails when WaitIdle's call has returned; wantReturned when it has not, or
// returned another error than want. Both must be called after synctest.Wait.
func wantBlocked(t *testing.T, when string, done chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s: WaitIdle returned %v, want it still waiting", when, err)
	default:
	}
}

func wantReturned(t *testing.T, when string, done chan error, want error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, want) || (want == nil && err != nil) {
			t.Fatalf("%s: WaitIdle: got %v, want %v", when, err, want)
		}
	default:
		t.Fatalf("%s: WaitIdle has not returned, want it returned with %v", when, want)
	}
}

func TestWaitIdle(t *testing.T) {
	t.Run("waits for running work", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Options{})
			h.rec.gate("a")
			h.schedule("a", 1, epoch)
			h.schedule("later", 2, at(time.Minute))
			h.start()
			done := waitIdleAsync(t.Context(), h.q)
			synctest.Wait()
			wantBlocked(t, "while a runs", done)
			h.release("a")
			wantReturned(t, "after a returned", done, nil)
		})
	})
	t.Run("waits for work due now, not for later work", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Options{})
			h.rec.gate("a")
			h.schedule("a", 1, epoch)
			h.start()
			done := waitIdleAsync(t.Context(), h.q)
			h.schedule("a", 2, at(time.Second)) // while a runs: it runs again at +1s
			h.release("a")
			wantReturned(t, "after the first call returned", done, nil)
			h.clk.Step(time.Second)
			done = waitIdleAsync(t.Context(), h.q)
			synctest.Wait()
			wantBlocked(t, "while the second call runs", done)
			h.release("a")
			wantReturned(t, "after the second call", done, nil)
			h.wantCalls("all", "a=1@+0s", "a=2@+1s")
		})
	})
	t.Run("returns at once when nothing is due", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Options{})
			h.start()
			if err := h.q.WaitIdle(t.Context()); err != nil {
				t.Fatalf("empty queue: WaitIdle: got %v, want nil", err)
			}
			h.schedule("later", 1, at(time.Hour))
			if err := h.q.WaitIdle(t.Context()); err != nil {
				t.Fatalf("work for later only: WaitIdle: got %v, want nil", err)
			}
		})
	})
	t.Run("ctx done", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Options{})
			h.rec.gate("a")
			h.schedule("a", 1, epoch)
			h.start()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // synctest's clock
			defer cancel()
			if err := h.q.WaitIdle(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("WaitIdle while a runs past ctx's deadline: got %v, want DeadlineExceeded", err)
			}
			h.release("a")
		})
	})
}

// TestWaitIdleBeforeRun: before Run, WaitIdle returns at once when nothing is due, and
// otherwise waits for Run to run the due work, or for ctx.
func TestWaitIdleBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		h.schedule("later", 1, at(time.Hour))
		if err := h.q.WaitIdle(t.Context()); err != nil {
			t.Fatalf("nothing due, no Run: WaitIdle: got %v, want nil", err)
		}
		h.schedule("a", 1, epoch)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := h.q.WaitIdle(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("due work, no Run: WaitIdle: got %v, want DeadlineExceeded", err)
		}
		done := waitIdleAsync(t.Context(), h.q)
		synctest.Wait()
		wantBlocked(t, "due work, no Run", done)
		h.start()
		wantReturned(t, "after Run ran the due work", done, nil)
		h.wantCalls("after Run", "a=1@+0s")
	})
}

// TestWaitIdleAfterRun: once Run has returned, WaitIdle returns nil or ErrStopped at once.
func TestWaitIdleAfterRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		h.rec.gate("a")
		h.schedule("a", 1, epoch)
		h.schedule("later", 2, at(time.Hour))
		h.start()
		h.cancel()
		done := waitIdleAsync(t.Context(), h.q)
		synctest.Wait()
		wantBlocked(t, "while a still runs after Run's ctx is done", done)
		h.release("a")
		wantReturned(t, "Run returned, nothing due", done, nil)
		h.schedule("b", 3, epoch)
		if err := h.q.WaitIdle(t.Context()); !errors.Is(err, ErrStopped) {
			t.Fatalf("Run returned, b due: WaitIdle: got %v, want ErrStopped", err)
		}
	})
}

// idleModel drives a queue on a fake clock with random operations whose outcome does not
// depend on timing: a new key each time work is due at once, and moves and cancels only of
// keys whose work lies ahead. It knows which keys must have run, with which value.
type idleModel struct {
	t       *testing.T
	r       *rand.Rand
	q       *Queue[string, int]
	clk     *testclock.FakeClock
	now     time.Duration
	n       int
	ahead   map[string]idleEntry // scheduled for after now
	wantRan []string             // "key=value", of every key due by now
}

type idleEntry struct {
	value int
	due   time.Duration
}

// ops schedules, moves and cancels work at random, a few times.
func (m *idleModel) ops() {
	for range m.r.IntN(5) {
		switch x := m.r.IntN(10); {
		case x < 6 || len(m.ahead) == 0:
			m.n++
			key := fmt.Sprint("k", m.n)
			due := m.now + time.Duration(m.r.IntN(6)-1)*time.Second
			m.q.Schedule(key, m.n, at(due))
			if due <= m.now {
				m.wantRan = append(m.wantRan, fmt.Sprintf("%s=%d", key, m.n))
			} else {
				m.ahead[key] = idleEntry{m.n, due}
			}
		case x < 8:
			key := m.anyAhead()
			m.n++
			e := idleEntry{m.n, m.now + time.Duration(1+m.r.IntN(5))*time.Second}
			m.q.Schedule(key, e.value, at(e.due))
			m.ahead[key] = e
		default:
			key := m.anyAhead()
			if !m.q.Cancel(key) {
				m.t.Fatalf("Cancel(%s) of work ahead: got false, want true", key)
			}
			delete(m.ahead, key)
		}
	}
}

func (m *idleModel) anyAhead() string {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range m.ahead {
			if !yield(k) {
				return
			}
		}
	})
	return keys[m.r.IntN(len(keys))]
}

// step advances the fake clock by a random 0 to 2 s and returns how many keys came due.
func (m *idleModel) step() int {
	d := time.Duration(m.r.IntN(3)) * time.Second
	m.clk.Step(d)
	m.now += d
	due := 0
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m.ahead {
			if !yield(k) {
				return
			}
		}
	}) {
		if e := m.ahead[k]; e.due <= m.now {
			m.wantRan = append(m.wantRan, fmt.Sprintf("%s=%d", k, e.value))
			delete(m.ahead, k)
			due++
		}
	}
	return due
}

// check compares what ran, in any order, with what the model says must have.
func (m *idleModel) check(when string, ran []string) {
	m.t.Helper()
	got, want := slices.Sorted(slices.Values(ran)), slices.Sorted(slices.Values(m.wantRan))
	if !slices.Equal(got, want) {
		m.t.Fatalf("%s (now +%v): ran %d keys, want %d\n got %v\nwant %v", when, m.now, len(got), len(want), got, want)
	}
}

// TestWaitIdleThenStep: in rounds of random work, a step that races with the queue setting
// its timer (made at once after scheduling, while the workers, done with the work due at
// once, set it), WaitIdle, and a step right after WaitIdle:
//   - WaitIdle returns only once all the work due by then has run, the raced step's
//     included;
//   - the step right after WaitIdle runs exactly the work it makes due, without any further
//     call: synctest.Wait alone must see it run.
func TestWaitIdleThenStep(t *testing.T) {
	rounds := 400
	if raceEnabled {
		rounds = 100
	}
	for _, workers := range []int{1, 3, 8} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newBareHarness(t, Options{Workers: workers})
				m := &idleModel{t: t, r: rand.New(rand.NewPCG(uint64(workers), 7)), q: h.q, clk: h.clk, ahead: map[string]idleEntry{}}
				h.start()
				ran := func() []string {
					var out []string
					for _, c := range h.rec.got() {
						out = append(out, c[:len(c)-len(c[slices.Index([]byte(c), '@'):])])
					}
					return out
				}
				for round := range rounds {
					m.ops()
					m.step() // races with the workers setting the timer for what ops scheduled
					if err := h.q.WaitIdle(t.Context()); err != nil {
						t.Fatal(err)
					}
					m.check(fmt.Sprintf("round %d, after WaitIdle", round), ran())
					m.step()
					synctest.Wait()
					m.check(fmt.Sprintf("round %d, a step after WaitIdle", round), ran())
				}
			})
		})
	}
}

// TestWaitIdleThenStepRealGoroutines is TestWaitIdleThenStep outside a synctest bubble,
// where the goroutines interleave as they do in a user's test: after the step that follows
// WaitIdle, it waits for exactly the work that the step made due (a lost timer fails the
// test after a minute), then calls WaitIdle and checks that nothing more ran.
func TestWaitIdleThenStepRealGoroutines(t *testing.T) {
	rounds := 300
	if raceEnabled {
		rounds = 100
	}
	for _, workers := range []int{1, 8} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			clk := testclock.NewFakeClock(epoch)
			var mu sync.Mutex
			var ranKeys []string
			ranCh := make(chan struct{}, 1<<16)
			q, err := New(func(_ context.Context, key string, v int) {
				mu.Lock()
				ranKeys = append(ranKeys, fmt.Sprintf("%s=%d", key, v))
				mu.Unlock()
				ranCh <- struct{}{}
			}, Options{Clock: clk, Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			stopped := make(chan error)
			go func() { stopped <- q.Run(ctx) }()
			defer func() { cancel(); <-stopped }()
			ran := func() []string {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(ranKeys)
			}
			m := &idleModel{t: t, r: rand.New(rand.NewPCG(uint64(workers), 8)), q: q, clk: clk, ahead: map[string]idleEntry{}}
			for round := range rounds {
				m.ops()
				m.step()
				if err := q.WaitIdle(t.Context()); err != nil {
					t.Fatal(err)
				}
				m.check(fmt.Sprintf("round %d, after WaitIdle", round), ran())
				for range len(ranCh) {
					<-ranCh
				}
				due := m.step()
				for i := range due {
					select {
					case <-ranCh:
					case <-time.After(time.Minute): // a watchdog, not a wait: this is a failure
						t.Fatalf("round %d: a step right after WaitIdle: %d of the %d keys it made due ran within a minute", round, i, due)
					}
				}
				if err := q.WaitIdle(t.Context()); err != nil {
					t.Fatal(err)
				}
				m.check(fmt.Sprintf("round %d, a step after WaitIdle", round), ran())
			}
		})
	}
}

// racyClock is a FakeClock whose timers call the next of beforeReset, if any, right before
// they are set. A test steps the clock there to land a step, deterministically, between the
// queue's reading of the clock and the setting of its timer.
type racyClock struct {
	*testclock.FakeClock
	mu          sync.Mutex
	beforeReset []func()
}

func (c *racyClock) NewTimer(d time.Duration) clock.Timer {
	return &racyTimer{Timer: c.FakeClock.NewTimer(d), c: c}
}

type racyTimer struct {
	clock.Timer
	c *racyClock
}

func (t *racyTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	var f func()
	if len(t.c.beforeReset) > 0 {
		f, t.c.beforeReset = t.c.beforeReset[0], t.c.beforeReset[1:]
	}
	t.c.mu.Unlock()
	if f != nil {
		f()
	}
	return t.Timer.Reset(d)
}

// TestArmingRace: a step that lands while the queue sets its timer delays that timer by the
// step, since the timer is set for a duration computed from the clock before the step.
// WaitIdle must not return on such a timer, nor before the timer is set anew from a later
// reading of the clock: after WaitIdle, a step to the deadline must run the work.
func TestArmingRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &racyClock{FakeClock: testclock.NewFakeClock(epoch)}
		rec := newRecorder(clk)
		q, err := New(rec.work, Options{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		stopped := make(chan error)
		go func() { stopped <- q.Run(ctx) }()
		defer func() { cancel(); <-stopped }()
		synctest.Wait()

		var waitIdleReturned atomic.Bool
		clk.mu.Lock()
		clk.beforeReset = []func(){
			func() { clk.Step(5 * time.Second) },
			func() {
				// The setting anew: hold it (for a millisecond of the bubble's time, which
				// passes only once every other goroutine is blocked), so that a WaitIdle
				// that did not wait for it would return, and the step after it would land
				// here.
				time.Sleep(time.Millisecond)
				if waitIdleReturned.Load() {
					t.Error("WaitIdle returned before the timer was set anew")
				}
			},
		}
		clk.mu.Unlock()
		q.Schedule("a", 1, at(10*time.Second)) // planned at +0s for 10s; set at +5s: due at +15s
		synctest.Wait()
		if got := clk.Now(); !got.Equal(at(5 * time.Second)) {
			t.Fatalf("the step inside the arming did not happen: clock at %s, want +5s", rel(got))
		}
		if err := q.WaitIdle(t.Context()); err != nil {
			t.Fatal(err)
		}
		waitIdleReturned.Store(true)
		synctest.Wait() // lets a setting of the timer that WaitIdle did not wait for happen
		clk.Step(5 * time.Second)
		synctest.Wait()
		if got, want := rec.got(), []string{"a=1@+10s"}; !slices.Equal(got, want) {
			t.Fatalf("a step to the deadline right after WaitIdle: calls: got %v, want %v", got, want)
		}
	})
}

// TestStarted: Started's channel is closed once Run has started, and then WaitIdle returns
// with the timer set for work due later, which a step of the clock fires.
func TestStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		h.schedule("later", 1, at(time.Hour))
		select {
		case <-h.q.Started():
			t.Fatal("Started closed before Run")
		default:
		}
		h.start()
		<-h.q.Started()
		if err := h.q.WaitIdle(t.Context()); err != nil {
			t.Fatalf("WaitIdle: %v", err)
		}
		h.step(time.Hour)
		h.wantCalls("an hour later", "later=1@+1h0m0s")
	})
}
