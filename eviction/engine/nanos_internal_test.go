package engine

import (
	"math"
	"testing"
	"time"
)

func TestDueNanos(t *testing.T) {
	now := time.Date(2030, 1, 1, 10, 0, 0, 5, time.UTC)
	for _, tc := range []struct {
		name string
		at   time.Time
		want int64
	}{
		{"a deadline", now, now.UnixNano()},
		{"the zero time", time.Time{}, math.MinInt64},
		{"after 2262", now.AddDate(300, 0, 0), math.MaxInt64},
		{"before 1678", time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), math.MinInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dueNanos(tc.at); got != tc.want {
				t.Errorf("dueNanos(%s): got %d, want %d", tc.at, got, tc.want)
			}
		})
	}
}
