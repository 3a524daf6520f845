package engine

import (
	"math"
	"time"
)

// Deadlines kept with an eviction (eviction.due) are unix nanoseconds, 8 bytes in every
// entry, rather than a time.Time (24 bytes and a pointer). They cover the years
// 1678 to 2262, as the schedule's own deadlines do; later ones are kept as the end of 2262
// (the schedule runs them then too), earlier ones as 1678.
var (
	minDue = time.Unix(0, math.MinInt64)
	maxDue = time.Unix(0, math.MaxInt64)
)

// dueNanos returns at in unix nanoseconds, clamped to the years 1678 to 2262.
func dueNanos(at time.Time) int64 {
	switch {
	case at.Before(minDue):
		return math.MinInt64
	case at.After(maxDue):
		return math.MaxInt64
	}
	return at.UnixNano()
}

// nanosTime returns the time of unix nanoseconds n in loc.
func nanosTime(n int64, loc *time.Location) time.Time { return time.Unix(0, n).In(loc) }
