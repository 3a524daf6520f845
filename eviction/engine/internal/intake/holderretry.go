package intake

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/timedqueue"
)

// holderRetries puts the update of a holder whose targets could not be listed back in the
// intake after a delay that grows with each consecutive failure of that holder, so that a
// failing Source is not asked in a busy loop. Its lock guards fails; the queue has its own.
type holderRetries[H any] struct {
	queue   *timedqueue.Queue[string, H]
	delay   func(failures int) time.Duration
	quiet   time.Duration // how long failures go unlogged after one that was
	mu      sync.Mutex
	fails   map[string]failures
	failing atomic.Int32 // len(fails), read without the lock on the common path
}

// failures are one holder's failed listings in a row, and when the last logged one was.
type failures struct {
	n        int
	loggedAt time.Time
}

func newHolderRetries[H any](clk clock.Clock, delay func(int) time.Duration, quiet time.Duration, put func(string, H)) (*holderRetries[H], error) {
	q, err := timedqueue.New(func(_ context.Context, name string, ev H) {
		put(name, ev)
	}, timedqueue.Options{Clock: clk, Workers: 1})
	if err != nil {
		return nil, err
	}
	return &holderRetries[H]{queue: q, delay: delay, quiet: quiet, fails: map[string]failures{}}, nil
}

// failed counts a failure of the holder name and puts ev back after the delay of that many
// failures; it returns the count, and whether to log this failure as an error: the first,
// and then one per quiet period while it keeps failing.
func (r *holderRetries[H]) failed(name string, ev H, now time.Time) (int, bool) {
	r.mu.Lock()
	f := r.fails[name]
	f.n++
	logIt := f.n == 1 || now.Sub(f.loggedAt) >= r.quiet
	if logIt {
		f.loggedAt = now
	}
	r.fails[name] = f
	r.failing.Store(int32(len(r.fails)))
	r.mu.Unlock()
	r.queue.Schedule(name, ev, now.Add(r.delay(f.n)))
	return f.n, logIt
}

// succeeded forgets the failures of the holder name.
func (r *holderRetries[H]) succeeded(name string) {
	if r.failing.Load() == 0 {
		return
	}
	r.mu.Lock()
	delete(r.fails, name)
	r.failing.Store(int32(len(r.fails)))
	r.mu.Unlock()
}
