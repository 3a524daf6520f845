package intake

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/timedqueue"
)

// Key names a target.
type Key = types.NamespacedName

// ErrStopped is returned by [Intake.WaitIdle] when the workers have stopped with updates
// left.
var ErrStopped = errors.New("intake: stopped with updates left")

// Intake queues holder updates (payload H) and target updates (T), processed by a fixed
// number of workers. Holders are hashed onto the workers by name, and targets by the holder
// they are located on: one holder's updates are processed in order, and before updates of
// its targets. Updates of one key that wait together are merged in the first one's place
// (the newest stands, or what keepHolder keeps). It is safe for concurrent use.
type Intake[H, T any] struct {
	keepHolder func(queued, next H) H
	delay      func(failures int) time.Duration
	quiet      time.Duration
	retries    *timedqueue.Queue[string, H] // holders whose listing failed, until put back

	mu      sync.Mutex // guards what follows; held while nothing but keepHolder is called
	shards  []shard[H, T]
	fails   map[string]failures // of the holders whose last listing failed
	pending int                 // updates queued or being processed
	puts    uint64              // updates put so far: WaitIdle's sign that new work came
	stopped int                 // workers that have stopped
	idle    sync.Cond           // signalled when pending drops to 0, or a worker stops
}

// failures are a holder's failed listings in a row, and when the last logged one was.
type failures struct {
	n        int
	loggedAt time.Time
}

// shard is the work of one worker: the holders hashed onto it, and the targets on them.
type shard[H, T any] struct {
	holders fifo[string, H]
	targets fifo[Key, T]
	wake    sync.Cond // signalled when work is put, or the workers are to stop
}

// New returns an Intake of workers workers. keepHolder chooses what to keep when a holder
// update comes while one is queued (nil: the newer); clk and delay pace the retries of
// holders whose listing failed, and quiet is how long such failures go unlogged after one
// that was (see [Intake.HolderFailed]).
func New[H, T any](workers int, keepHolder func(queued, next H) H, clk clock.Clock, delay func(failures int) time.Duration, quiet time.Duration) (*Intake[H, T], error) {
	in := &Intake[H, T]{keepHolder: keepHolder, delay: delay, quiet: quiet, shards: make([]shard[H, T], workers), fails: map[string]failures{}}
	in.idle.L = &in.mu
	for i := range in.shards {
		in.shards[i].wake.L = &in.mu
	}
	var err error
	in.retries, err = timedqueue.New(func(_ context.Context, name string, ev H) error {
		in.PutHolder(name, ev)
		return nil
	}, timedqueue.Options{Clock: clk, Workers: 1})
	if err != nil {
		return nil, err
	}
	return in, nil
}

// HolderFailed puts the holder update ev back in the intake after the delay of its count of
// failures in a row, its listing at now having failed. It returns that count, and whether to
// log this failure as an error: the first, then one per quiet period while it keeps failing.
func (in *Intake[H, T]) HolderFailed(name string, ev H, now time.Time) (n int, logIt bool) {
	in.mu.Lock()
	f := in.fails[name]
	f.n++
	if logIt = f.n == 1 || now.Sub(f.loggedAt) >= in.quiet; logIt {
		f.loggedAt = now
	}
	in.fails[name] = f
	in.mu.Unlock()
	in.retries.Schedule(name, ev, now.Add(in.delay(f.n)))
	return f.n, logIt
}

// HolderListed forgets the failures of the holder name.
func (in *Intake[H, T]) HolderListed(name string) {
	in.mu.Lock()
	delete(in.fails, name)
	in.mu.Unlock()
}

// PutHolder queues an update of the holder name and returns at once.
func (in *Intake[H, T]) PutHolder(name string, ev H) {
	s := in.shardOf(name)
	in.mu.Lock()
	if queued, ok := s.holders.items[name]; ok && in.keepHolder != nil {
		ev = in.keepHolder(queued, ev)
	}
	in.queued(s, s.holders.put(name, ev))
}

// PutTarget queues an update of the target key, located on holder, and returns at once.
func (in *Intake[H, T]) PutTarget(holder string, key Key, ev T) {
	s := in.shardOf(holder)
	in.mu.Lock()
	in.queued(s, s.targets.put(key, ev))
}

// queued counts an update just put in s, added or merged, wakes s's worker and unlocks mu.
func (in *Intake[H, T]) queued(s *shard[H, T], added bool) {
	in.puts++
	if added {
		in.pending++
	}
	s.wake.Signal()
	in.mu.Unlock()
}

// shardOf hashes holder onto a shard with FNV-1a, as kube hashes node names onto its
// workers, allocating nothing.
func (in *Intake[H, T]) shardOf(holder string) *shard[H, T] {
	h := uint32(2166136261)
	for i := 0; i < len(holder); i++ {
		h = (h ^ uint32(holder[i])) * 16777619
	}
	return &in.shards[h%uint32(len(in.shards))]
}

// Handlers process the updates: each is called by one worker at a time, for the updates of
// its shard in order.
type Handlers[H, T any] struct {
	Holder func(ctx context.Context, name string, ev H)
	Target func(ctx context.Context, key Key, ev T)
}

// Run processes updates with h until ctx is done, then waits for its workers and returns.
func (in *Intake[H, T]) Run(ctx context.Context, h Handlers[H, T]) {
	var wg sync.WaitGroup
	wg.Go(func() { _ = in.retries.Run(ctx) })
	for i := range in.shards {
		wg.Go(func() { in.work(ctx, &in.shards[i], h) })
	}
	wg.Go(func() {
		<-ctx.Done()
		in.wakeAll()
	})
	wg.Wait()
}

// wakeAll wakes the workers and the callers of WaitIdle, to look again.
func (in *Intake[H, T]) wakeAll() {
	in.mu.Lock()
	in.idle.Broadcast()
	for i := range in.shards {
		in.shards[i].wake.Broadcast()
	}
	in.mu.Unlock()
}

// work processes the updates of s, holders first, until ctx is done; then it takes no more,
// so that what is left is reported by WaitIdle (ErrStopped) rather than taken and dropped.
func (in *Intake[H, T]) work(ctx context.Context, s *shard[H, T], h Handlers[H, T]) {
	in.mu.Lock()
	for ctx.Err() == nil {
		if name, ev, ok := s.holders.take(); ok {
			in.unlocked(func() { h.Holder(ctx, name, ev) })
		} else if key, ev, ok := s.targets.take(); ok {
			in.unlocked(func() { h.Target(ctx, key, ev) })
		} else {
			s.wake.Wait()
		}
	}
	in.stopped++
	in.idle.Broadcast()
	in.mu.Unlock()
}

// unlocked runs the handler call f without mu, and counts its update done.
func (in *Intake[H, T]) unlocked(f func()) {
	in.mu.Unlock()
	f()
	in.mu.Lock()
	if in.pending--; in.pending == 0 {
		in.idle.Broadcast()
	}
}

// WaitIdle waits until no update is queued or being processed and no retry is due, and
// returns how many updates had been put by then, in all; or ctx's error, or ErrStopped.
func (in *Intake[H, T]) WaitIdle(ctx context.Context) (uint64, error) {
	if err := in.retries.WaitIdle(ctx); errors.Is(err, timedqueue.ErrStopped) {
		return 0, ErrStopped
	} else if err != nil {
		return 0, err
	}
	defer context.AfterFunc(ctx, in.wakeAll)()
	in.mu.Lock()
	defer in.mu.Unlock()
	for in.pending > 0 && in.stopped < len(in.shards) && ctx.Err() == nil {
		in.idle.Wait()
	}
	switch {
	case in.pending == 0:
		return in.puts, nil
	case ctx.Err() != nil:
		return 0, ctx.Err()
	}
	return 0, ErrStopped
}

// Backlog returns the number of updates queued and not yet processed.
func (in *Intake[H, T]) Backlog() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for i := range in.shards {
		n += len(in.shards[i].holders.items) + len(in.shards[i].targets.items)
	}
	return n
}
