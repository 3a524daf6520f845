package engine

import (
	"math"
	"time"
)

// An eviction keeps its deadline in unix nanoseconds, 8 bytes rather than a time.Time's 24
// and a pointer; the years 1678 to 2262, as the schedule's, later and earlier ones clamped.
var (
	minDue = time.Unix(0, math.MinInt64)
	maxDue = time.Unix(0, math.MaxInt64)
)

func dueNanos(at time.Time) int64 {
	switch {
	case at.Before(minDue):
		return math.MinInt64
	case at.After(maxDue):
		return math.MaxInt64
	}
	return at.UnixNano()
}

func nanosTime(n int64, loc *time.Location) time.Time { return time.Unix(0, n).In(loc) }
