package intake

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"
)

// recorder runs an Intake of string payloads and records what its handlers are called with.
type recorder struct {
	in   *Intake[string, string]
	mu   sync.Mutex
	got  []string
	hold chan struct{} // when set, each handler call waits for a value
}

func newRecorder(t *testing.T, workers int, keep func(queued, next string) string) *recorder {
	t.Helper()
	in, err := New[string, string](workers, keep, clock.RealClock{}, func(n int) time.Duration { return time.Duration(n) * time.Second }, 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return &recorder{in: in}
}

func (r *recorder) record(s string) {
	if r.hold != nil {
		<-r.hold
	}
	r.mu.Lock()
	r.got = append(r.got, s)
	r.mu.Unlock()
}

// run runs the Intake until ctx ends or the returned stop is called, which waits for Run to
// return.
func (r *recorder) run(ctx context.Context, h Handlers[string, string]) (stop func()) {
	if h.Holder == nil {
		h.Holder = func(_ context.Context, name, ev string) { r.record("holder " + name + "=" + ev) }
	}
	if h.Target == nil {
		h.Target = func(_ context.Context, key Key, ev string) { r.record("target " + key.Name + "=" + ev) }
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		r.in.Run(ctx, h)
		close(done)
	}()
	return func() { cancel(); <-done }
}

func (r *recorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func TestOrderAndMerge(t *testing.T) {
	keepFirst := func(queued, next string) string { return queued + "+" + next }
	tests := []struct {
		name string
		keep func(queued, next string) string
		put  func(in *Intake[string, string])
		want []string
	}{
		{"holders before targets, each in arrival order", nil, func(in *Intake[string, string]) {
			in.PutTarget("h1", Key{Name: "a"}, "1")
			in.PutHolder("h2", "1")
			in.PutTarget("h2", Key{Name: "b"}, "1")
			in.PutHolder("h1", "1")
		}, []string{"holder h2=1", "holder h1=1", "target a=1", "target b=1"}},
		{"updates of one key merged in the first one's place, the newest standing", nil, func(in *Intake[string, string]) {
			in.PutTarget("h", Key{Name: "a"}, "1")
			in.PutTarget("h", Key{Name: "b"}, "1")
			in.PutTarget("h", Key{Name: "a"}, "2")
			in.PutHolder("h", "1")
			in.PutHolder("g", "1")
			in.PutHolder("h", "2")
		}, []string{"holder h=2", "holder g=1", "target a=2", "target b=1"}},
		{"keepHolder given the queued update and the next", keepFirst, func(in *Intake[string, string]) {
			in.PutHolder("h", "1")
			in.PutHolder("h", "2")
			in.PutHolder("h", "3")
		}, []string{"holder h=1+2+3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRecorder(t, 1, tc.keep)
				tc.put(r.in)
				puts := len(tc.want) // the merged ones counted below
				if got, want := r.in.Backlog(), puts; got != want {
					t.Errorf("Backlog before Run: got %d, want %d", got, want)
				}
				stop := r.run(context.Background(), Handlers[string, string]{})
				defer stop()
				if _, err := r.in.WaitIdle(context.Background()); err != nil {
					t.Fatal(err)
				}
				if got := r.calls(); !slices.Equal(got, tc.want) {
					t.Errorf("got %q, want %q", got, tc.want)
				}
				if got := r.in.Backlog(); got != 0 {
					t.Errorf("Backlog when idle: got %d, want 0", got)
				}
			})
		})
	}
}

// TestShardOf: holders are hashed onto the workers with FNV-1a, as kube hashes node names,
// and a target goes to the worker of the holder it is given with.
func TestShardOf(t *testing.T) {
	in, err := New[string, string](7, nil, clock.RealClock{}, func(int) time.Duration { return 0 }, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		name := fmt.Sprintf("node-%d", i)
		h := fnv.New32a()
		h.Write([]byte(name))
		if got, want := in.shardOf(name), &in.shards[h.Sum32()%7]; got != want {
			t.Errorf("%s: got shard %p, want %p", name, got, want)
		}
		in.PutTarget(name, Key{Name: name}, "")
		if got := len(in.shardOf(name).targets.items); got != 1 {
			t.Errorf("%s: the shard of its holder has %d targets, want 1", name, got)
		}
		in.shardOf(name).targets = fifo[Key, string]{}
	}
}

// TestWaitIdle: WaitIdle waits for a handler that runs, and returns how many updates had
// been put, merged ones included; once Run has returned, it returns the same with nothing
// left, and ErrStopped with updates left, which a stopped worker did not take.
func TestWaitIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(t, 2, nil)
		r.hold = make(chan struct{})
		stop := r.run(context.Background(), Handlers[string, string]{})
		r.in.PutHolder("h", "1")
		r.in.PutHolder("h", "2")
		r.in.PutTarget("g", Key{Name: "a"}, "1")
		var puts uint64
		var err error
		done := make(chan struct{})
		go func() {
			puts, err = r.in.WaitIdle(context.Background())
			close(done)
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("WaitIdle returned while handlers ran")
		default:
		}
		close(r.hold)
		<-done
		if err != nil || puts != 3 {
			t.Errorf("WaitIdle: got %d, %v; want 3, nil", puts, err)
		}
		stop()
		if puts, err := r.in.WaitIdle(context.Background()); err != nil || puts != 3 {
			t.Errorf("WaitIdle after Run returned with nothing left: got %d, %v; want 3, nil", puts, err)
		}
		r.in.PutTarget("g", Key{Name: "b"}, "1")
		if _, err := r.in.WaitIdle(context.Background()); !errors.Is(err, ErrStopped) {
			t.Errorf("WaitIdle after Run returned with an update left: got %v, want ErrStopped", err)
		}
		if got := r.in.Backlog(); got != 1 {
			t.Errorf("Backlog after Run returned: got %d, want 1", got)
		}
	})
}

// TestStoppedWorkerTakesNoMore: a worker whose ctx ends while it processes an update takes
// no more: the updates left stay queued, and WaitIdle reports them.
func TestStoppedWorkerTakesNoMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(t, 1, nil)
		r.in.PutTarget("h", Key{Name: "a"}, "1")
		r.in.PutTarget("h", Key{Name: "b"}, "1")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stop := r.run(ctx, Handlers[string, string]{Target: func(_ context.Context, key Key, _ string) {
			r.record(key.Name)
			cancel()
		}})
		synctest.Wait()
		stop()
		if got, want := r.calls(), []string{"a"}; !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
		if _, err := r.in.WaitIdle(context.Background()); !errors.Is(err, ErrStopped) {
			t.Errorf("WaitIdle: got %v, want ErrStopped", err)
		}
		if got := r.in.Backlog(); got != 1 {
			t.Errorf("Backlog: got %d, want 1", got)
		}
	})
}

// TestWaitIdleCtx: WaitIdle returns ctx's error when ctx ends first, as before Run.
func TestWaitIdleCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(t, 1, nil)
		r.in.PutHolder("h", "1")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := r.in.WaitIdle(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want context.DeadlineExceeded", err)
		}
	})
}

// TestHolderFailed: a holder whose listing fails comes back after the delay of its count of
// failures in a row (n seconds here), logged at the first failure and then once per quiet
// period (6 s: the one at 6 s is logged); HolderListed starts the count again.
func TestHolderFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(t, 1, nil)
		start := time.Now()
		var listed atomic.Bool
		stop := r.run(context.Background(), Handlers[string, string]{Holder: func(_ context.Context, name, ev string) {
			if listed.Swap(false) {
				r.in.HolderListed(name)
				return
			}
			n, logIt := r.in.HolderFailed(name, ev, time.Now())
			r.record(fmt.Sprintf("%v %s n=%d log=%v", time.Since(start), ev, n, logIt))
		}})
		defer stop()
		r.in.PutHolder("h", "x")
		time.Sleep(16 * time.Second)
		listed.Store(true) // the retry due at 21 s lists
		time.Sleep(6 * time.Second)
		r.in.PutHolder("h", "y")
		synctest.Wait()
		want := []string{
			"0s x n=1 log=true", "1s x n=2 log=false", "3s x n=3 log=false",
			"6s x n=4 log=true", "10s x n=5 log=false", "15s x n=6 log=true",
			"22s y n=1 log=true",
		}
		if got := r.calls(); !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}
