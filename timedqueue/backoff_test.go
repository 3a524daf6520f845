package timedqueue

import (
	"testing"
	"time"
)

func TestBackoffDelayExported(t *testing.T) {
	exact := Backoff{Base: time.Second, Cap: 10 * time.Second, Jitter: -1}
	for _, tc := range []struct {
		name    string
		b       Backoff
		attempt int
		want    time.Duration
	}{
		{"first attempt waits Base", exact, 1, time.Second},
		{"attempt 0 counts as 1", exact, 0, time.Second},
		{"doubles", exact, 3, 4 * time.Second},
		{"capped", exact, 5, 10 * time.Second},
		{"far past the cap", exact, 1 << 30, 10 * time.Second},
		{"zero Base and Cap take the defaults", Backoff{Jitter: -1}, 1, DefaultBackoffBase},
		{"default cap", Backoff{Jitter: -1}, 100, DefaultBackoffCap},
		{"negative fields count as zero", Backoff{Base: -1, Cap: -1, Jitter: -1}, 1, DefaultBackoffBase},
		{"a cap beyond 146 years does not overflow", Backoff{Base: time.Hour, Cap: 1<<63 - 1, Jitter: -1}, 80, 1<<63 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.Delay(tc.attempt); got != tc.want {
				t.Errorf("Delay(%d): got %v, want %v", tc.attempt, got, tc.want)
			}
		})
	}
	t.Run("jitter takes at most its fraction", func(t *testing.T) {
		b := Backoff{Base: time.Second, Jitter: 0.5}
		for range 1000 {
			if got := b.Delay(1); got < 500*time.Millisecond || got > time.Second {
				t.Fatalf("Delay(1): got %v, want within [500ms, 1s]", got)
			}
		}
	})
}

func TestBackoffDelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Backoff
		want []time.Duration // for attempts 1, 2, ...
	}{
		{"doubling to the cap", Backoff{Base: time.Second, Cap: 10 * time.Second, Jitter: -1},
			[]time.Duration{1e9, 2e9, 4e9, 8e9, 10e9, 10e9}},
		{"cap below base", Backoff{Base: 3 * time.Second, Cap: time.Second, Jitter: -1},
			[]time.Duration{3e9, 3e9}},
		{"defaults without jitter", Backoff{Jitter: -1},
			[]time.Duration{100e6, 200e6, 400e6}},
		{"default cap", Backoff{Base: time.Minute, Jitter: -1},
			[]time.Duration{time.Minute, 2 * time.Minute, 2 * time.Minute}},
		{"base above the default cap", Backoff{Base: time.Hour, Jitter: -1},
			[]time.Duration{time.Hour, time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.b.normalize()
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.want {
				if got := b.delay(uint32(i + 1)); got != want {
					t.Errorf("delay(%d): got %v, want %v", i+1, got, want)
				}
			}
			if got, want := b.delay(1000), b.Cap; got != want {
				t.Errorf("delay(1000): got %v, want %v", got, want)
			}
		})
	}
	b, _ := Backoff{Base: time.Second, Cap: time.Minute, Jitter: 0.5}.normalize()
	for n := uint32(1); n < 10; n++ {
		nominal := min(time.Second<<(n-1), time.Minute)
		for range 100 {
			if d := b.delay(n); d < nominal/2 || d > nominal {
				t.Fatalf("Jitter 0.5, delay(%d): got %v, want within [%v, %v]", n, d, nominal/2, nominal)
			}
		}
	}
}
