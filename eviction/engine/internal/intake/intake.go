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

// Intake queues holder and target updates, and has them processed by a fixed number of
// workers. Holders are hashed onto the workers by name, and targets by the holder they are
// located on, so that one holder's updates are processed in order and before updates of its
// targets; updates of one key that wait together are merged (the newest stands, or what
// the holder merge keeps), so a burst of updates of one object costs one piece of work.
// H and T are the caller's payloads of a holder and a target update. It is safe for
// concurrent use; make it with New.
type Intake[H, T any] struct {
	shards     []*shard[H, T]
	keepHolder func(queued, next H) H
	retries    *holderRetries[H]
}

// New returns an Intake of workers workers. keepHolder chooses what to keep when a holder
// update comes while one is queued (nil: the newer); clk and delay pace the retries of
// holders whose listing failed, and quiet is how long such failures go unlogged after one
// that was (see [Intake.HolderFailed]).
func New[H, T any](workers int, keepHolder func(queued, next H) H, clk clock.Clock, delay func(failures int) time.Duration, quiet time.Duration) (*Intake[H, T], error) {
	in := &Intake[H, T]{shards: make([]*shard[H, T], workers), keepHolder: keepHolder}
	for i := range in.shards {
		in.shards[i] = newShard[H, T]()
	}
	var err error
	in.retries, err = newHolderRetries(clk, delay, quiet, in.PutHolder)
	if err != nil {
		return nil, err
	}
	return in, nil
}

// HolderFailed puts the holder update ev back in the intake after a delay, its listing at
// now having failed. It returns how many times in a row it has failed, and whether to log
// this failure as an error: the first, then one per quiet period while it keeps failing.
func (in *Intake[H, T]) HolderFailed(name string, ev H, now time.Time) (failures int, logIt bool) {
	return in.retries.failed(name, ev, now)
}

// HolderListed forgets the failures of the holder name.
func (in *Intake[H, T]) HolderListed(name string) { in.retries.succeeded(name) }

// PutHolder queues an update of the holder name and returns at once.
func (in *Intake[H, T]) PutHolder(name string, ev H) {
	in.shardOf(name).putHolder(name, ev, in.keepHolder)
}

// PutTarget queues an update of the target key, located on holder, and returns at once.
func (in *Intake[H, T]) PutTarget(holder string, key Key, ev T) {
	in.shardOf(holder).putTarget(key, ev)
}

func (in *Intake[H, T]) shardOf(holder string) *shard[H, T] {
	return in.shards[fnv1a(holder)%uint32(len(in.shards))]
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
	wg.Go(func() { _ = in.retries.queue.Run(ctx) })
	for _, s := range in.shards {
		wg.Go(func() {
			defer s.stop()
			// Stopped, a worker takes no more work: what it would take stays queued, for
			// WaitIdle to report (ErrStopped), rather than be taken and dropped.
			for ctx.Err() == nil {
				u, ok := s.next()
				if !ok {
					select {
					case <-ctx.Done():
					case <-s.wake:
					}
					continue
				}
				if u.isHolder {
					h.Holder(ctx, u.holder, u.holderEv)
				} else {
					h.Target(ctx, u.target, u.targetEv)
				}
			}
		})
	}
	wg.Wait()
}

// WaitIdle waits until every worker has been idle once and no retry is due, and returns
// how many updates had been put by then, in all; or ctx's error, or ErrStopped.
func (in *Intake[H, T]) WaitIdle(ctx context.Context) (uint64, error) {
	if err := in.retries.queue.WaitIdle(ctx); err != nil {
		if errors.Is(err, timedqueue.ErrStopped) {
			return 0, ErrStopped
		}
		return 0, err
	}
	var puts uint64
	for _, s := range in.shards {
		n, err := s.waitIdle(ctx)
		if err != nil {
			return 0, err
		}
		puts += n
	}
	return puts, nil
}

// Backlog returns the number of updates queued and not yet processed.
func (in *Intake[H, T]) Backlog() int {
	n := 0
	for _, s := range in.shards {
		n += s.backlog()
	}
	return n
}

// fnv1a hashes s (FNV-1a, as kube hashes node names onto its workers), allocating nothing.
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
