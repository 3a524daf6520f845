package budget

import (
	"fmt"
	"math"
	"slices"
)

// Rate is a token bucket: at most PerSecond a second on average, and at most Burst at once
// after a quiet spell; the zero Rate limits nothing. It is the engine's Limit.
type Rate struct {
	PerSecond float64
	Burst     int
}

// The bounds of a Rate keep the bucket's arithmetic in nanoseconds far from overflow: slots
// at most 10^12 ns apart, a burst at most 10^15 ns ahead, and a million evictions waiting
// reach 10^18 ns, under the 9.2*10^18 of an int64.
const (
	minPerSecond    = 1e-3
	maxBurstSeconds = 1e6
)

// Validate checks r, the option named field, and says what is wrong with it.
func (r Rate) Validate(field string) error {
	switch {
	case math.IsNaN(r.PerSecond) || math.IsInf(r.PerSecond, 0) || r.PerSecond < 0:
		return fmt.Errorf("%s.PerSecond must be a finite number, 0 or more: got %v", field, r.PerSecond)
	case r.Burst < 0:
		return fmt.Errorf("%s.Burst must not be negative: got %d", field, r.Burst)
	case r.PerSecond > 0 && r.Burst == 0:
		return fmt.Errorf("%s.Burst must be at least 1 when %s.PerSecond is set", field, field)
	case r.PerSecond == 0 && r.Burst != 0:
		return fmt.Errorf("%s.Burst is %d but %s.PerSecond is 0 (no limit)", field, r.Burst, field)
	case r.PerSecond > 0 && r.PerSecond < minPerSecond:
		return fmt.Errorf("%s.PerSecond must be 0 (no limit) or at least %v: got %v", field, minPerSecond, r.PerSecond)
	case r.PerSecond > 0 && float64(r.Burst)/r.PerSecond > maxBurstSeconds:
		return fmt.Errorf("%s.Burst %d refills in %.0f s at %s.PerSecond %v, more than the %.0f s allowed", field, r.Burst, float64(r.Burst)/r.PerSecond, field, r.PerSecond, maxBurstSeconds)
	}
	return nil
}

// Tokens is the budget of the rate limits: an eviction takes a token of the overall limit
// and of the limit of each taint key that makes it due, all at the same slot, so that it
// waits for the slowest; evictions that ask in deadline order go in deadline order. A
// waiting eviction holds its slot; one that leaves without going gives it back to the next
// that asks. Make it with NewTokens.
type Tokens struct {
	overall *bucket            // nil: no overall limit
	byKey   map[string]*bucket // per taint key
	full    *Brake             // its fully disrupted groups' rates; nil for none
	buf     []*bucket          // the buckets of one request, reused under the gate's lock
}

// tokenHold is the slot an eviction holds, and the buckets it came from.
type tokenHold struct {
	slot int64
	from []*bucket
}

// NewTokens returns the budget of an overall rate (zero: none), of per-key rates, and of
// the rates of full's fully disrupted groups (nil, or a brake without such a rate: none);
// nil when none of them limits anything.
func NewTokens(overall Rate, perKey map[string]Rate, full *Brake) *Tokens {
	if full != nil && full.group.fullRate.PerSecond <= 0 {
		full = nil
	}
	t := &Tokens{byKey: map[string]*bucket{}, full: full}
	if overall.PerSecond > 0 {
		t.overall = newBucket(overall)
	}
	for k, r := range perKey {
		if r.PerSecond > 0 {
			t.byKey[k] = newBucket(r)
		}
	}
	if t.overall == nil && len(t.byKey) == 0 && full == nil {
		return nil
	}
	return t
}

// Admit lets the eviction go when its slot has come, and otherwise holds a slot for it.
func (t *Tokens) Admit(r *Request, state any) (Verdict, any) {
	h, waits := state.(*tokenHold)
	if !waits {
		bs := t.bucketsFor(r.Causes)
		slot := reserve(bs, r.Now)
		if slot <= r.Now {
			return Go, nil
		}
		h = &tokenHold{slot: slot, from: slices.Clone(bs)}
	}
	if h.slot <= r.Now {
		return Go, nil // its slot has come
	}
	return Verdict{Wait: true, Until: h.slot, Reason: "RateLimited"}, h
}

// Release gives the slot back.
func (t *Tokens) Release(state any, now int64) {
	h := state.(*tokenHold)
	for _, b := range h.from {
		b.giveBack(h.slot, now)
	}
}

// bucketsFor returns the buckets an eviction due because of causes takes a slot from, in
// storage reused from call to call.
func (t *Tokens) bucketsFor(causes []Cause) []*bucket {
	bs := t.buf[:0]
	add := func(b *bucket) {
		if b != nil && !slices.Contains(bs, b) {
			bs = append(bs, b)
		}
	}
	add(t.overall)
	for _, c := range causes {
		add(t.byKey[c.Key])
		if t.full != nil {
			add(t.full.fullBucket(c))
		}
	}
	t.buf = bs
	return bs
}
