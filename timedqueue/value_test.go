package timedqueue_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/timedqueue"
)

// TestValue: Value finds a key's value while it is pending and while its work runs, then
// the value of its next scheduling; and nothing once a Cancel has ended its work, even
// while the attempt still runs.
func TestValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		started, release := make(chan struct{}), make(chan struct{})
		q, err := timedqueue.New(func(ctx context.Context, key string, v int) error {
			close(started)
			<-release
			return nil
		}, timedqueue.Options{Clock: clk, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = q.Run(ctx) }()

		if _, ok := q.Value("a"); ok {
			t.Errorf("Value of an unknown key: got ok, want none")
		}
		q.Schedule("a", 1, clk.Now().Add(time.Second))
		if v, ok := q.Value("a"); !ok || v != 1 {
			t.Errorf("pending: got %d, %v; want 1, true", v, ok)
		}
		clk.Step(time.Second)
		<-started
		if v, ok := q.Value("a"); !ok || v != 1 {
			t.Errorf("running: got %d, %v; want 1, true", v, ok)
		}
		q.Schedule("a", 2, clk.Now().Add(time.Hour))
		if v, ok := q.Value("a"); !ok || v != 2 {
			t.Errorf("running, scheduled again: got %d, %v; want the pending 2, true", v, ok)
		}
		q.Cancel("a")
		if v, ok := q.Value("a"); ok {
			t.Errorf("running, cancelled: got %d, true; want none", v)
		}
		close(release)
		synctest.Wait()
		if v, ok := q.Value("a"); ok {
			t.Errorf("after its work returned: got %d, true; want none", v)
		}
	})
}
