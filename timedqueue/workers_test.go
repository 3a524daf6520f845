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
		var mu sync.Mutex
		running, peak, done := 0, 0, 0
		release := make(chan struct{})
		q, err := timedqueue.New(func(ctx context.Context, key string, _ int) error {
			mu.Lock()
			running++
			peak = max(peak, running)
			mu.Unlock()
			select {
			case <-release:
			case <-ctx.Done():
			}
			mu.Lock()
			running--
			done++
			mu.Unlock()
			return nil
		}, timedqueue.Options{Clock: clk, Workers: 8})
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
			mu.Lock()
			defer mu.Unlock()
			if running != wantRunning {
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
		release <- struct{}{}
		synctest.Wait()
		for range 7 {
			release <- struct{}{}
			synctest.Wait()
		}
		check("limit 1, after the 8 running calls returned", 1)
		if got := workerGoroutines(); got != 1 {
			t.Errorf("limit 1: got %d worker goroutines, want 1", got)
		}
		for range 32 {
			release <- struct{}{}
			synctest.Wait()
		}
		mu.Lock()
		if done != 40 || peak != 8 {
			t.Errorf("got %d done (peak %d running), want all 40 (peak 8)", done, peak)
		}
		mu.Unlock()
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
