package engine

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Deadlines kept with an eviction (record.due) are unix nanoseconds, 8 bytes in every
// record, rather than a time.Time (24 bytes and a pointer). They cover the years
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

// never is where an eviction waits in the schedule when it must stay there without coming
// due: paused by the brake, or closed while its attempt runs.
var never = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)

// nanosTime returns the time of unix nanoseconds n in loc.
func nanosTime(n int64, loc *time.Location) time.Time { return time.Unix(0, n).In(loc) }

// sortPending sorts p by time, ties by key, so that Pending has one order.
func sortPending(p []Pending) {
	slices.SortFunc(p, func(a, b Pending) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Target.Namespace, b.Target.Namespace), cmp.Compare(a.Target.Name, b.Target.Name))
	})
}
