package budget

import (
	"math"
	"slices"
	"time"
)

// bucket is a token bucket that hands out slots, the times at which one eviction each may
// go, written as virtual scheduling (GCRA): no refill loop, no floats. tat is the next
// slot's time at the sustained pace, and a slot may run up to (burst-1) intervals ahead of
// it. A slot is counted only at or after tat-ahead, in whatever order slots are counted:
// that alone keeps every window within burst + rate*window.
//
// A slot asked for from now is the next at the pace, so that evictions that ask in
// deadline order leave in deadline order. One asked for from a later time, by an eviction
// that waits for a slower bucket too (reserve), is a claim, counted once the pace gets
// there, so that the slots before it stay free for others. A slot given back before its
// time is handed out again. Times are unix nanoseconds of the caller's clock. A bucket is
// not safe for concurrent use; make it with newBucket.
type bucket struct {
	interval int64   // nanoseconds between slots at the sustained pace, at least 1
	ahead    int64   // (burst-1)*interval: how far ahead of tat a slot may run
	tat      int64   // the next slot's time at the sustained pace; full: far in the past
	claims   []int64 // slots taken ahead of the pace, not counted yet: sorted, interval apart
	free     []int64 // slots counted and given back, sorted
}

// newBucket returns a full bucket for l, which must be a valid rate that limits.
func newBucket(l Rate) *bucket {
	interval := max(int64(math.Ceil(float64(time.Second)/l.PerSecond)), 1)
	return &bucket{interval: interval, ahead: int64(l.Burst-1) * interval, tat: math.MinInt64 / 2}
}

// pace returns the next slot from now at the sustained pace. First it counts the claims
// that are due, and those that handing out that slot would leave too close to count.
func (b *bucket) pace(now int64) int64 {
	for {
		s := max(now, b.tat-b.ahead)
		if len(b.claims) == 0 {
			return s
		}
		f := b.claims[0]
		if after := max(b.tat, s) + b.interval; f > now && after-b.ahead <= f {
			return s // after: tat once s is counted
		}
		b.count(f)
		b.claims = b.claims[1:]
	}
}

// count counts a slot at t, which the callers keep at or after tat-ahead.
func (b *bucket) count(t int64) { b.tat = max(b.tat, t) + b.interval }

// next returns the earliest slot at or after t (not before now) that the bucket can give,
// without taking it.
func (b *bucket) next(t, now int64) int64 {
	s := b.pace(now)
	if t > s {
		s = b.claimable(t)
	}
	if i, _ := slices.BinarySearch(b.free, t); i < len(b.free) && b.free[i] < s {
		return b.free[i]
	}
	return s
}

// claimable returns the earliest time at or after t that is an interval away from every
// claim.
func (b *bucket) claimable(t int64) int64 {
	i, _ := slices.BinarySearch(b.claims, t-b.interval+1)
	for ; i < len(b.claims) && b.claims[i] < t+b.interval; i++ {
		t = b.claims[i] + b.interval
	}
	return t
}

// take takes the slot at t, which must be what next(t, now) returned.
func (b *bucket) take(t, now int64) {
	if i, ok := slices.BinarySearch(b.free, t); ok {
		b.free = slices.Delete(b.free, i, i+1)
		return
	}
	if t == b.pace(now) {
		b.count(t)
		return
	}
	i, _ := slices.BinarySearch(b.claims, t)
	b.claims = slices.Insert(b.claims, i, t)
}

// giveBack returns the slot at t, taken and not used, so that it is handed out again. A
// slot whose time has passed is gone: the bucket saves up no more than its burst.
func (b *bucket) giveBack(t, now int64) {
	if i, _ := slices.BinarySearch(b.free, now); i > 0 {
		b.free = slices.Delete(b.free, 0, i)
	}
	if i, ok := slices.BinarySearch(b.claims, t); ok {
		b.claims = slices.Delete(b.claims, i, i+1) // never counted: simply dropped
		return
	}
	if t >= now {
		i, _ := slices.BinarySearch(b.free, t)
		b.free = slices.Insert(b.free, i, t)
	}
}

// reserve takes from every bucket of bs the same slot, the earliest at or after now that
// all of them have, and returns it: an eviction limited by several buckets waits for the
// slowest. With no buckets it returns now.
func reserve(bs []*bucket, now int64) int64 {
	t := now
	for {
		s := t
		for _, b := range bs {
			s = max(s, b.next(t, now))
		}
		if s == t {
			break
		}
		t = s // a later slot: every bucket must have it, so ask again from there
	}
	for _, b := range bs {
		b.take(t, now)
	}
	return t
}
