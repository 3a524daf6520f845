package timedqueue_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/timedqueue"
)

// TestSetWorkers: the number of work functions running at once follows SetWorkers, up and
// down, within [1, Options.Workers], and so does the number of goroutines; work taken by a
// worker that has to leave is done, none is lost.
func TestSetWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		g := newGatedWork()
		q, err := timedqueue.New(g.work, timedqueue.Options{Clock: clk, Workers: 8})
		if err != nil {
			t.Fatal(err)
		}
		if got := q.SetWorkers(2); got != 2 {
			t.Errorf("SetWorkers(2) before Run: got %d, want 2", got)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { _ = q.Run(ctx); close(stopped) }()
		for i := range 40 {
			q.Schedule(fmt.Sprint("k", i), i, clk.Now())
		}
		synctest.Wait()
		check := func(step string, wantRunning int) {
			t.Helper()
			if running, _, _ := g.counts(); running != wantRunning {
				t.Errorf("%s: got %d running, want %d", step, running, wantRunning)
			}
		}
		check("limit 2", 2)
		if got := workerGoroutines(); got != 2 {
			t.Errorf("limit 2: got %d worker goroutines, want 2", got)
		}
		q.SetWorkers(6)
		synctest.Wait()
		check("limit 6", 6)
		q.SetWorkers(100) // clamped to Options.Workers
		synctest.Wait()
		check("limit 100, clamped", 8)
		if got := q.Workers(); got != 8 {
			t.Errorf("Workers after SetWorkers(100): got %d, want 8", got)
		}
		q.SetWorkers(0) // clamped to 1: the running calls end, then one at a time
		g.release <- struct{}{}
		synctest.Wait()
		for range 7 {
			g.release <- struct{}{}
			synctest.Wait()
		}
		check("limit 1, after the 8 running calls returned", 1)
		if got := workerGoroutines(); got != 1 {
			t.Errorf("limit 1: got %d worker goroutines, want 1", got)
		}
		for range 32 {
			g.release <- struct{}{}
			synctest.Wait()
		}
		if _, peak, done := g.counts(); done != 40 || peak != 8 {
			t.Errorf("got %d done (peak %d running), want all 40 (peak 8)", done, peak)
		}
		cancel()
		<-stopped
	})
}

// workerGoroutines counts the goroutines of the process that run a queue's worker. It reads
// their stacks rather than runtime.NumGoroutine, which counts every goroutine of the
// process: one of an earlier test still on its way out made the count flaky.
func workerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "timedqueue.(*Queue[...]).worker(") {
			count++
		}
	}
	return count
}

// TestSetWorkersLowerLeavesAfterItsCall: a worker past a lower limit leaves after the call
// it is in, so that the limit binds from the next call on. Two workers, each with a call
// under way and more work due; the limit goes to 1: once both calls return, never more
// than one runs, and every item is done. (Which worker leaves is the scheduler's choice;
// the scenario runs several times.)
func TestSetWorkersLowerLeavesAfterItsCall(t *testing.T) {
	for round := range 10 {
		synctest.Test(t, func(t *testing.T) {
			clk := testclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			g := newGatedWork()
			q, err := timedqueue.New(g.work, timedqueue.Options{Clock: clk, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			go func() { _ = q.Run(ctx); close(stopped) }()
			defer func() { cancel(); <-stopped }()
			q.Schedule("single", 0, clk.Now())
			synctest.Wait() // one worker holds it
			for i := range 100 {
				q.Schedule(fmt.Sprint("k", i), i, clk.Now())
			}
			synctest.Wait() // the other calls k0; more wait
			q.SetWorkers(1)
			for range 2 { // the two calls under way return
				g.release <- struct{}{}
				synctest.Wait()
			}
			for n := 2; n < 101; n++ {
				if r, _, _ := g.counts(); r > 1 {
					t.Fatalf("round %d, after %d calls: got %d running, want at most 1 at limit 1", round, n, r)
				}
				g.release <- struct{}{}
				synctest.Wait()
			}
			if _, _, done := g.counts(); done != 101 {
				t.Errorf("round %d: got %d done, want all 101", round, done)
			}
		})
	}
}

// gatedWork is a work function whose calls each wait for a value on release (or for their
// context), counting the calls running, the most at once, and those done.
type gatedWork struct {
	release chan struct{}

	mu                  sync.Mutex
	running, peak, done int
}

func newGatedWork() *gatedWork { return &gatedWork{release: make(chan struct{})} }

func (g *gatedWork) work(ctx context.Context, _ string, _ int) {
	g.mu.Lock()
	g.running++
	g.peak = max(g.peak, g.running)
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.running--
	g.done++
	g.mu.Unlock()
}

// counts returns the calls running now, the most that ran at once, and those done.
func (g *gatedWork) counts() (running, peak, done int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running, g.peak, g.done
}
