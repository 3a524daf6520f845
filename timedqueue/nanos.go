package timedqueue

import (
	"math"
	"time"
)

// Deadlines are kept as int64 unix nanoseconds, which is what lets the heap hold them inline
// in 8 bytes. That covers the years 1678 to 2262; times outside are clamped (see toNanos).
const (
	zeroNanos = math.MinInt64     // the zero time.Time
	minNanos  = math.MinInt64 + 1 // any other time before 1678
	maxNanos  = math.MaxInt64     // any time after 2262
)

var (
	minTime = time.Unix(0, minNanos)
	maxTime = time.Unix(0, maxNanos)
)

// toNanos maps t to the heap's int64 scale: the zero time to the smallest value (it sorts
// first and runs at once), earlier times to minNanos, later times to maxNanos.
func toNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return zeroNanos
	case t.Before(minTime):
		return minNanos
	case t.After(maxTime):
		return maxNanos
	}
	return t.UnixNano()
}

// fromNanos is the inverse of toNanos, up to clamping.
func fromNanos(n int64) time.Time {
	if n == zeroNanos {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// sub returns a-b without overflowing.
func sub(a, b int64) time.Duration {
	d := a - b
	if (d < 0) != (a < b) {
		if a < b {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return time.Duration(d)
}

// add returns n+d without overflowing.
func add(n int64, d time.Duration) int64 {
	s := n + int64(d)
	if d > 0 && s < n {
		return maxNanos
	}
	if d < 0 && s > n {
		return minNanos
	}
	return s
}
