package engine_test

import (
	"testing"
	"time"

	"github.com/taintevict/taintevict/eviction/engine"
)

func TestBackoffDelay(t *testing.T) {
	const (
		base = 100 * time.Millisecond // the zero value's
		ceil = 2 * time.Minute
	)
	for _, tc := range []struct {
		name   string
		b      engine.Backoff
		want   []time.Duration // after failures 1, 2, ...
		capped time.Duration   // after many
	}{
		{"doubling to the cap", engine.Backoff{Base: time.Second, Cap: 10 * time.Second, Jitter: -1},
			[]time.Duration{1e9, 2e9, 4e9, 8e9, 10e9, 10e9}, 10e9},
		{"cap below base", engine.Backoff{Base: 3 * time.Second, Cap: time.Second, Jitter: -1},
			[]time.Duration{3e9, 3e9}, 3e9},
		{"defaults without jitter", engine.Backoff{Jitter: -1}, []time.Duration{base, 2 * base, 4 * base}, ceil},
		{"default cap", engine.Backoff{Base: time.Minute, Jitter: -1}, []time.Duration{time.Minute, ceil, ceil}, ceil},
		{"base above the default cap", engine.Backoff{Base: time.Hour, Jitter: -1}, []time.Duration{time.Hour, time.Hour}, time.Hour},
		{"negative fields count as zero", engine.Backoff{Base: -1, Cap: -1, Jitter: -1}, []time.Duration{base}, ceil},
		{"an odd cap", engine.Backoff{Base: 2, Cap: 5, Jitter: -1}, []time.Duration{2, 4, 5, 5}, 5},
		{"a cap beyond 146 years", engine.Backoff{Base: time.Hour, Cap: 1<<63 - 1, Jitter: -1}, []time.Duration{time.Hour}, 1<<63 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, want := range tc.want {
				if got := tc.b.Delay(i + 1); got != want {
					t.Errorf("Delay(%d): got %v, want %v", i+1, got, want)
				}
			}
			for _, n := range []int{0, -5} {
				if got := tc.b.Delay(n); got != tc.want[0] {
					t.Errorf("Delay(%d) counts as 1: got %v, want %v", n, got, tc.want[0])
				}
			}
			if got := tc.b.Delay(1 << 30); got != tc.capped {
				t.Errorf("Delay(1<<30): got %v, want %v", got, tc.capped)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		jitter float64
		lo     float64 // the shortest delay, as a fraction of the nominal one
	}{
		{"jitter 0.5", 0.5, 0.5},
		{"jitter 0 is the default 0.2", 0, 0.8},
		{"jitter above 1 counts as 0", 1.5, 0.8},
	} {
		b := engine.Backoff{Base: time.Second, Cap: time.Minute, Jitter: tc.jitter}
		for n := 1; n < 10; n++ {
			nominal := min(time.Second<<(n-1), time.Minute)
			for range 100 {
				if d := b.Delay(n); d < time.Duration(tc.lo*float64(nominal)) || d > nominal {
					t.Fatalf("%s: Delay(%d): got %v, want within [%v, %v]", tc.name, n, d, time.Duration(tc.lo*float64(nominal)), nominal)
				}
			}
		}
	}
}
