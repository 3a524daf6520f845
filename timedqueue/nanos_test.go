package timedqueue

import (
	"math"
	"testing"
	"time"
)

func TestNanos(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   time.Time
		want int64
		back time.Time
	}{
		{"zero", time.Time{}, zeroNanos, time.Time{}},
		{"year 1", time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), minNanos, minTime},
		{"year 1600", time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), minNanos, minTime},
		{"smallest", minTime, minNanos, minTime},
		{"unix epoch", time.Unix(0, 0), 0, time.Unix(0, 0)},
		{"2030", epoch, epoch.UnixNano(), epoch},
		{"largest", maxTime, maxNanos, maxTime},
		{"year 3000", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), maxNanos, maxTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := toNanos(tc.in)
			if got != tc.want {
				t.Errorf("toNanos: got %d, want %d", got, tc.want)
			}
			if back := fromNanos(got); !back.Equal(tc.back) {
				t.Errorf("fromNanos: got %v, want %v", back, tc.back)
			}
		})
	}
}

func TestSubAdd(t *testing.T) {
	for _, tc := range []struct {
		a, b int64
		want time.Duration
	}{
		{5, 3, 2},
		{3, 5, -2},
		{math.MaxInt64, math.MinInt64, math.MaxInt64},
		{math.MinInt64, math.MaxInt64, math.MinInt64},
		{math.MaxInt64, -1, math.MaxInt64},
		{math.MinInt64, 1, math.MinInt64},
		{0, math.MinInt64 + 1, math.MaxInt64},
		{epoch.UnixNano(), zeroNanos, math.MaxInt64},
	} {
		if got := sub(tc.a, tc.b); got != tc.want {
			t.Errorf("sub(%d, %d): got %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	for _, tc := range []struct {
		n    int64
		d    time.Duration
		want int64
	}{
		{1, 2, 3},
		{maxNanos - 1, 5, maxNanos},
		{minNanos + 1, -5, minNanos},
		{0, math.MaxInt64, math.MaxInt64},
		{-5, math.MaxInt64, math.MaxInt64 - 5},
	} {
		if got := add(tc.n, tc.d); got != tc.want {
			t.Errorf("add(%d, %d): got %d, want %d", tc.n, tc.d, got, tc.want)
		}
	}
}
