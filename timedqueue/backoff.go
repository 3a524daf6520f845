package timedqueue

import (
	"errors"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults used for the zero fields of [Backoff].
const (
	DefaultBackoffBase = 100 * time.Millisecond
	DefaultBackoffCap  = 2 * time.Minute
	DefaultJitter      = 0.2
)

// Backoff is the retry policy for failed work: the n-th retry waits Base·2^(n-1), at most
// Cap, less a random fraction of up to Jitter of that delay, so that many keys failing
// together do not retry in lockstep. The zero value retries forever, from
// [DefaultBackoffBase] up to [DefaultBackoffCap], with [DefaultJitter].
type Backoff struct {
	// Base is the delay before the first retry. 0 means DefaultBackoffBase.
	Base time.Duration
	// Cap is the longest delay. 0 means DefaultBackoffCap.
	Cap time.Duration
	// MaxAttempts bounds the attempts of one scheduling, the first included; after the last
	// one fails the work is dropped.
	// 0 means no bound: work is retried until it succeeds, is cancelled or is replaced.
	MaxAttempts int
	// Jitter is the largest fraction of a delay taken away at random, in [0, 1]. 0 means
	// DefaultJitter; a negative value turns jitter off.
	Jitter float64
}

// normalize fills in defaults and rejects values that cannot be meant.
func (b Backoff) normalize() (Backoff, error) {
	if b.Base < 0 || b.Cap < 0 || b.MaxAttempts < 0 || b.Jitter > 1 {
		return b, errors.New("timedqueue: Backoff fields must not be negative and Jitter must be at most 1")
	}
	if b.Base == 0 {
		b.Base = DefaultBackoffBase
	}
	if b.Cap == 0 {
		b.Cap = max(DefaultBackoffCap, b.Base)
	}
	if b.Cap < b.Base {
		b.Cap = b.Base
	}
	switch {
	case b.Jitter == 0:
		b.Jitter = DefaultJitter
	case b.Jitter < 0:
		b.Jitter = 0
	}
	return b, nil
}

// Delay returns how long a queue with this policy waits after the given failed attempt (1
// for the first, smaller counts as 1) before the next, jitter included, so that code that
// retries work of its own can follow the same policy. Zero fields take their defaults;
// out-of-range ones, which New rejects, count as zero here. It is safe for concurrent use.
func (b Backoff) Delay(attempt int) time.Duration {
	b.Base, b.Cap, b.MaxAttempts = max(b.Base, 0), max(b.Cap, 0), 0
	if b.Jitter > 1 {
		b.Jitter = 0
	}
	b, _ = b.normalize() // cannot fail once clamped
	return b.delay(uint32(min(max(attempt, 1), math.MaxUint32)))
}

// delay returns how long to wait after the given failed attempt (1 for the first).
func (b Backoff) delay(attempt uint32) time.Duration {
	d := b.Base
	for i := uint32(1); i < attempt && d < b.Cap; i++ {
		if d > b.Cap/2 {
			d = b.Cap // doubling would pass the cap, or overflow for caps over 146 years
			break
		}
		d *= 2
	}
	d = min(d, b.Cap)
	if b.Jitter > 0 {
		d -= time.Duration(rand.Float64() * b.Jitter * float64(d))
	}
	return d
}
