package timedqueue

import (
	"testing"
	"testing/synctest"
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

// TestZeroTimeLag: work scheduled at the zero time runs at once and reports no lag, not the
// 292 years since the zero time.
func TestZeroTimeLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		h.start()
		h.schedule("a", 1, time.Time{})
		synctest.Wait()
		h.wantCalls("after scheduling at the zero time", "a=1@+0s")
		h.wantKeyEvents("after scheduling at the zero time", "a", "scheduled a zero", "started a #1 lag=0s", "succeeded a #1")
	})
}
