package engine

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff is how long an [Engine] waits to try again after a failure (of an Actuator call,
// of the recheck, of a Source lookup): the n-th retry waits Base·2^(n-1), at most Cap, less
// a random fraction of up to Jitter of that. The zero value waits 100 ms, doubling up to 2
// minutes, with a jitter of 0.2.
type Backoff struct {
	// Base is the delay before the first retry. 0 means 100 ms; negative is an error.
	Base time.Duration
	// Cap is the longest delay. 0 means 2 minutes (or Base, if larger); negative is an error.
	Cap time.Duration
	// Jitter is the largest fraction of a delay taken away at random, at most 1. 0 means
	// 0.2; a negative value turns jitter off.
	Jitter float64
}

// Delay returns the wait after the given failure (1 for the first; smaller counts as 1),
// jitter included. Zero fields take their defaults; out-of-range ones, which New rejects,
// count as zero. It is safe for concurrent use.
func (b Backoff) Delay(failures int) time.Duration { return b.delay(failures, rand.Float64()) }

// delay returns the delay after failures with jitter as the random draw, in [0, 1).
func (b Backoff) delay(failures int, jitter float64) time.Duration {
	base, limit, j := b.Base, b.Cap, b.Jitter
	if base <= 0 {
		base = 100 * time.Millisecond
	}
	if limit <= 0 {
		limit = 2 * time.Minute
	}
	limit = max(limit, base)
	switch {
	case j == 0 || j > 1:
		j = 0.2
	case j < 0:
		j = 0
	}
	d := base
	for i := 1; i < failures && d < limit; i++ {
		if d > limit/2 {
			d = limit // doubling would pass the cap, or overflow for caps over 146 years
			break
		}
		d *= 2
	}
	return d - time.Duration(jitter*j*float64(d))
}

func (b Backoff) validate() error {
	if b.Base < 0 || b.Cap < 0 || b.Jitter > 1 {
		return fmt.Errorf("engine: Backoff: Base (%v) and Cap (%v) must not be negative, Jitter (%v) must be at most 1", b.Base, b.Cap, b.Jitter)
	}
	return nil
}
