package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/timedqueue"
)

// lookupRetries processes again, after a delay, the holders and targets whose Source
// lookups failed, so that a failing Source is not asked in a busy loop: the delay grows with
// each consecutive failure of the same key, by Options.Backoff. Keys are "holder/NAME" and
// "target/NAMESPACE/NAME"; the value re-queues the update. It is safe for concurrent use;
// make it with newLookupRetries.
type lookupRetries struct {
	queue   *timedqueue.Queue[string, func()]
	backoff Backoff
	mu      sync.Mutex
	fails   map[string]int // consecutive failures per key
	failing atomic.Int32   // len(fails), read without the lock on hot paths
}

func newLookupRetries(clk clock.Clock, backoff Backoff) (*lookupRetries, error) {
	q, err := timedqueue.New(func(_ context.Context, _ string, requeue func()) error {
		requeue()
		return nil
	}, timedqueue.Options{Clock: clk, Workers: 1})
	if err != nil {
		return nil, err
	}
	return &lookupRetries{queue: q, backoff: backoff, fails: make(map[string]int)}, nil
}

// run runs the retries until ctx is done.
func (r *lookupRetries) run(ctx context.Context) { _ = r.queue.Run(ctx) }

// failed counts a failure of key and runs requeue after the backoff of that many failures.
func (r *lookupRetries) failed(key string, now time.Time, requeue func()) {
	r.mu.Lock()
	r.fails[key]++
	n := r.fails[key]
	r.failing.Store(int32(len(r.fails)))
	r.mu.Unlock()
	r.queue.Schedule(key, requeue, now.Add(r.backoff.Delay(n)))
}

// succeeded forgets the failures of the key that key returns, if any; key is called only
// when some key is failing, so the common path builds no string.
func (r *lookupRetries) succeeded(key func() string) {
	if r.failing.Load() == 0 {
		return
	}
	r.mu.Lock()
	delete(r.fails, key())
	r.failing.Store(int32(len(r.fails)))
	r.mu.Unlock()
}

func holderRetryKey(name string) string { return "holder/" + name }

func targetRetryKey(key types.NamespacedName) string {
	return "target/" + key.Namespace + "/" + key.Name
}
