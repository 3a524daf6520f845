package timedqueue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

// TestStress runs random Schedule and Cancel calls from several goroutines against a running
// queue on the real clock, with deadlines from 5 ms ago to 20 ms ahead. Each goroutine owns
// its keys, so that each key's last operation is well defined; every scheduling has a value
// of its own. It checks that the last scheduling of every key that was not cancelled ran
// exactly once, that no value ran twice, that no value whose Cancel returned true ever
// started, and that no key ran twice at once.
func TestStress(t *testing.T) {
	ops := 1_000_000
	if raceEnabled || testing.Short() {
		ops = 40_000
	}
	defer goleak.VerifyNone(t)
	const goroutines, keysPer = 4, 2000

	var (
		mu        sync.Mutex
		started   = map[int]int{}     // value: starts
		cancelled = map[int]bool{}    // values whose Cancel returned true
		active    = map[string]bool{} // keys running now
		failures  []string
		expect    map[int]bool // values that must run, known once the operations are done
		remaining int
		allDone   = make(chan struct{})
	)
	fail := func(format string, args ...any) {
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	work := func(_ context.Context, key string, v int) {
		mu.Lock()
		if active[key] {
			fail("%s: started %d while running", key, v)
		}
		active[key] = true
		started[v]++
		if started[v] > 1 {
			fail("%s: value %d started %d times", key, v, started[v])
		}
		if cancelled[v] {
			fail("%s: value %d started after its Cancel returned true", key, v)
		}
		if expect[v] {
			if remaining--; remaining == 0 {
				close(allDone)
			}
		}
		mu.Unlock()
		runtime.Gosched() // give another worker the chance to start the same key
		mu.Lock()
		active[key] = false
		mu.Unlock()
	}
	q, err := New(work, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- q.Run(ctx) }()

	type keyState struct {
		last          int // the value of the last scheduling, 0 for none
		lastAt        time.Time
		lastCancelled bool // a Cancel returned true after the last scheduling
	}
	states := make([]map[string]*keyState, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		states[g] = map[string]*keyState{}
		keys := make([]string, keysPer)
		for i := range keys {
			keys[i] = fmt.Sprintf("g%d/k%d", g, i)
			states[g][keys[i]] = &keyState{}
		}
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 42))
			for i := range ops / goroutines {
				key := keys[r.IntN(keysPer)]
				st := states[g][key]
				if r.IntN(10) < 7 {
					v := g*ops + i + 1
					// Round(0) drops the monotonic reading, so that Equal compares what the
					// queue compares: the wall clock, in nanoseconds.
					when := time.Now().Round(0).Add(time.Duration(r.IntN(25_000_000)) - 5*time.Millisecond)
					if when.Equal(st.lastAt) {
						when = when.Add(1)
					}
					if !q.Schedule(key, v, when) {
						mu.Lock()
						fail("%s: Schedule(%d) at a new time reported no change", key, v)
						mu.Unlock()
					}
					st.last, st.lastAt, st.lastCancelled = v, when, false
					continue
				}
				if q.Cancel(key) {
					mu.Lock()
					cancelled[st.last] = true
					if started[st.last] > 0 {
						fail("%s: Cancel returned true for %d, which had started", key, st.last)
					}
					mu.Unlock()
					st.lastCancelled = true
				}
			}
		})
	}
	wg.Wait()

	mu.Lock()
	expect = map[int]bool{}
	for g := range states {
		for _, st := range states[g] {
			if st.last != 0 && !st.lastCancelled && started[st.last] == 0 {
				expect[st.last] = true
			}
		}
	}
	remaining = len(expect)
	if remaining == 0 {
		close(allDone)
	}
	mu.Unlock()
	select {
	case <-allDone:
	case <-time.After(2 * time.Minute):
		mu.Lock()
		t.Errorf("after 2 minutes, %d of the last schedulings had not run", remaining)
		mu.Unlock()
	}
	cancel()
	if err := <-runDone; err != context.Canceled {
		t.Errorf("Run: got %v, want context.Canceled", err)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, f := range failures {
		t.Error(f)
	}
	notCancelled := 0
	for g := range states {
		for key, st := range states[g] {
			if st.last == 0 || st.lastCancelled {
				continue
			}
			notCancelled++
			if started[st.last] != 1 {
				t.Errorf("%s: last scheduling %d started %d times, want 1", key, st.last, started[st.last])
			}
		}
	}
	if got := q.Len(); got != 0 {
		t.Errorf("Len after every key ran or was cancelled: got %d, want 0", got)
	}
	if err := q.checkInvariants(); err != nil {
		t.Error(err)
	}
	if len(cancelled) == 0 || len(started) == 0 || notCancelled == 0 {
		t.Errorf("the test exercised too little: %d values cancelled, %d started, %d keys ending scheduled", len(cancelled), len(started), notCancelled)
	}
	t.Logf("%d operations: %d values started, %d cancelled, %d keys ended scheduled", ops, len(started), len(cancelled), notCancelled)
}

// TestModel runs random operations on a fake clock with one worker and instant work, and
// compares what runs, in which order and when, with a model of the documented semantics.
func TestModel(t *testing.T) {
	seeds := uint64(8)
	if raceEnabled {
		seeds = 2
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { modelRun(t, seed) })
	}
}

func modelRun(t *testing.T, seed uint64) {
	synctest.Test(t, func(t *testing.T) {
		h := newBareHarness(t, Options{Workers: 1})
		h.start()
		type entry struct {
			value int
			due   time.Duration
			seq   int
		}
		model := map[string]entry{}
		seq := 0
		now := time.Duration(0)
		var want, checked []string
		r := rand.New(rand.NewPCG(seed, 99))
		for op := range 3000 {
			key := fmt.Sprint("k", r.IntN(40))
			switch x := r.IntN(10); {
			case x < 5:
				due := now + time.Duration(r.IntN(20)-3)*time.Second
				e, ok := model[key]
				changed := !ok || e.due != due
				if got := h.schedule(key, op, at(due)); got != changed {
					t.Fatalf("op %d: Schedule(%s, %s): got %v, want %v", op, key, rel(at(due)), got, changed)
				}
				if changed {
					e.seq = seq
					seq++
				}
				e.value, e.due = op, due
				model[key] = e
				if due <= now {
					// Due at once: it runs before the next operation.
					synctest.Wait()
					want = append(want, fmt.Sprintf("%s=%d@%s", key, op, rel(at(now))))
					delete(model, key)
				}
			case x < 7:
				_, ok := model[key]
				if got := h.unschedule(key); got != ok {
					t.Fatalf("op %d: Cancel(%s): got %v, want %v", op, key, got, ok)
				}
				delete(model, key)
			case x < 8:
				e, ok := model[key]
				_, got, gotOK := h.q.Get(key)
				if gotOK != ok || (ok && !got.Equal(at(e.due))) {
					t.Fatalf("op %d: Get(%s): got %s %v, want %s %v", op, key, rel(got), gotOK, rel(at(e.due)), ok)
				}
			default:
				now += time.Duration(r.IntN(4)) * time.Second
				h.step(at(now).Sub(h.clk.Now()))
				var due []string
				for k, e := range model {
					if e.due <= now {
						due = append(due, k)
					}
				}
				slices.SortFunc(due, func(a, b string) int {
					ea, eb := model[a], model[b]
					if ea.due != eb.due {
						return int(ea.due - eb.due)
					}
					return ea.seq - eb.seq
				})
				for _, k := range due {
					want = append(want, fmt.Sprintf("%s=%d@%s", k, model[k].value, rel(at(now))))
					delete(model, k)
				}
			}
			synctest.Wait()
			if got := h.rec.gotFrom(len(checked)); !slices.Equal(got, want[len(checked):]) {
				t.Fatalf("op %d: calls differ from the model:\n got %v\nwant %v\nafter %v", op, got, want[len(checked):], tail(checked))
			}
			checked = want
			if got := h.q.Len(); got != len(model) {
				t.Fatalf("op %d: Len: got %d, want %d", op, got, len(model))
			}
			if err := h.q.checkInvariants(); err != nil {
				t.Fatalf("op %d: %v", op, err)
			}
		}
		for k := range model {
			h.unschedule(k)
		}
	})
}

func tail(s []string) []string { return s[max(0, len(s)-8):] }
