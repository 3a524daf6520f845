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
	shards     []shard[H, T]
	keepHolder func(queued, next H) H
	delay      func(failures int) time.Duration
	quiet      time.Duration
	retries    *timedqueue.Queue[string, H] // holders whose listing failed, until put back
}

// shard is the work of one worker: the holders hashed onto it, and the targets on them.
type shard[H, T any] struct {
	mu      sync.Mutex
	changed sync.Cond // broadcast when work is put, and when the worker finds none or stops
	holders fifo[string, H]
	targets fifo[Key, T]
	fails   map[string]failures // of the holders whose last listing failed
	puts    uint64              // updates put so far: WaitIdle's sign that new work came
	busy    bool                // the worker runs a handler
	stopped bool                // the worker has stopped
}

// failures are a holder's failed listings in a row, and when the last logged one was.
type failures struct {
	n        int
	loggedAt time.Time
}

// New returns an Intake of workers workers. keepHolder chooses what to keep when a holder
// update comes while one is queued (nil: the newer); clk, delay and quiet are for
// [Intake.HolderFailed].
func New[H, T any](workers int, keepHolder func(queued, next H) H, clk clock.Clock, delay func(failures int) time.Duration, quiet time.Duration) (*Intake[H, T], error) {
	in := &Intake[H, T]{shards: make([]shard[H, T], workers), keepHolder: keepHolder, delay: delay, quiet: quiet}
	for i := range in.shards {
		in.shards[i].changed.L = &in.shards[i].mu
		in.shards[i].fails = map[string]failures{}
	}
	var err error
	in.retries, err = timedqueue.New(func(_ context.Context, name string, ev H) {
		in.PutHolder(name, ev)
	}, timedqueue.Options{Clock: clk, Workers: 1})
	if err != nil {
		return nil, err
	}
	return in, nil
}

// HolderFailed puts the holder update ev back in the intake after delay(its failures in a
// row), its listing at now having failed. It returns that count, and whether to log this
// failure as an error: the first, then one per quiet period while it keeps failing.
func (in *Intake[H, T]) HolderFailed(name string, ev H, now time.Time) (n int, logIt bool) {
	s := in.shardOf(name)
	s.mu.Lock()
	f := s.fails[name]
	f.n++
	if logIt = f.n == 1 || now.Sub(f.loggedAt) >= in.quiet; logIt {
		f.loggedAt = now
	}
	s.fails[name] = f
	s.mu.Unlock()
	in.retries.Schedule(name, ev, now.Add(in.delay(f.n)))
	return f.n, logIt
}

// HolderListed forgets the failures of the holder name.
func (in *Intake[H, T]) HolderListed(name string) {
	s := in.shardOf(name)
	s.mu.Lock()
	delete(s.fails, name)
	s.mu.Unlock()
}

// PutHolder queues an update of the holder name and returns at once.
func (in *Intake[H, T]) PutHolder(name string, ev H) {
	s := in.shardOf(name)
	s.mu.Lock()
	if queued, ok := s.holders.items[name]; ok && in.keepHolder != nil {
		ev = in.keepHolder(queued, ev)
	}
	s.holders.put(name, ev)
	s.queued()
}

// PutTarget queues an update of the target key, located on holder, and returns at once.
func (in *Intake[H, T]) PutTarget(holder string, key Key, ev T) {
	s := in.shardOf(holder)
	s.mu.Lock()
	s.targets.put(key, ev)
	s.queued()
}

// queued counts an update just put, wakes the worker, and unlocks the shard.
func (s *shard[H, T]) queued() {
	s.puts++
	s.changed.Broadcast()
	s.mu.Unlock()
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

// Handlers process the updates: each worker calls them for the updates of its shard, in
// order.
type Handlers[H, T any] struct {
	Holder func(ctx context.Context, name string, ev H)
	Target func(ctx context.Context, key Key, ev T)
}

// Run processes updates with h until ctx is done, then waits for its workers and returns.
func (in *Intake[H, T]) Run(ctx context.Context, h Handlers[H, T]) {
	var wg sync.WaitGroup
	wg.Go(func() { _ = in.retries.Run(ctx) })
	for i := range in.shards {
		wg.Go(func() { in.shards[i].work(ctx, h) })
	}
	wg.Go(func() {
		<-ctx.Done()
		in.wakeAll()
	})
	wg.Wait()
}

// wakeAll wakes the workers and the callers of WaitIdle, to look again.
func (in *Intake[H, T]) wakeAll() {
	for i := range in.shards {
		s := &in.shards[i]
		s.mu.Lock()
		s.changed.Broadcast()
		s.mu.Unlock()
	}
}

// work processes the updates of s, holders first, until ctx is done; then it takes no more,
// so that what is left is reported by WaitIdle (ErrStopped) rather than taken and dropped.
func (s *shard[H, T]) work(ctx context.Context, h Handlers[H, T]) {
	s.mu.Lock()
	for ctx.Err() == nil {
		if name, ev, ok := s.holders.take(); ok {
			s.unlocked(func() { h.Holder(ctx, name, ev) })
		} else if key, ev, ok := s.targets.take(); ok {
			s.unlocked(func() { h.Target(ctx, key, ev) })
		} else {
			s.changed.Broadcast() // idle
			s.changed.Wait()
		}
	}
	s.stopped = true
	s.changed.Broadcast()
	s.mu.Unlock()
}

// unlocked runs the handler call f with the shard unlocked, and busy.
func (s *shard[H, T]) unlocked(f func()) {
	s.busy = true
	s.mu.Unlock()
	f()
	s.mu.Lock()
	s.busy = false
}

// WaitIdle waits until every worker has been idle once and no retry is due, and returns
// how many updates had been put by then, in all; or ctx's error, or ErrStopped.
func (in *Intake[H, T]) WaitIdle(ctx context.Context) (uint64, error) {
	if err := in.retries.WaitIdle(ctx); errors.Is(err, timedqueue.ErrStopped) {
		return 0, ErrStopped
	} else if err != nil {
		return 0, err
	}
	defer context.AfterFunc(ctx, in.wakeAll)()
	var puts uint64
	for i := range in.shards {
		n, err := in.shards[i].waitIdle(ctx)
		if err != nil {
			return 0, err
		}
		puts += n
	}
	return puts, nil
}

// waitIdle waits until the shard is empty and its worker runs no handler, and returns how
// many updates had been put by then; or ctx's error, or ErrStopped when the worker has
// stopped with updates left.
func (s *shard[H, T]) waitIdle(ctx context.Context) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for (s.busy || s.backlog() > 0) && !s.stopped && ctx.Err() == nil {
		s.changed.Wait()
	}
	switch {
	case !s.busy && s.backlog() == 0:
		return s.puts, nil
	case ctx.Err() != nil:
		return 0, ctx.Err()
	}
	return 0, ErrStopped
}

func (s *shard[H, T]) backlog() int { return len(s.holders.items) + len(s.targets.items) }

// Backlog returns the number of updates queued and not yet processed.
func (in *Intake[H, T]) Backlog() int {
	n := 0
	for i := range in.shards {
		s := &in.shards[i]
		s.mu.Lock()
		n += s.backlog()
		s.mu.Unlock()
	}
	return n
}
