package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateBudgets(t *testing.T) {
	tests := []struct {
		name    string
		rate    Limit
		taint   map[string]Limit
		brake   Brake
		wantErr string // "" for valid
	}{
		{name: "zero: off"},
		{name: "a rate with a burst", rate: Limit{5, 5}},
		{name: "a fraction of 1 never pauses, and is valid", brake: Brake{Fraction: 1, ZoneFraction: 1}},
		{name: "negative rate", rate: Limit{-1, 1}, wantErr: "engine: RateLimit.PerSecond"},
		{name: "NaN rate", rate: Limit{math.NaN(), 1}, wantErr: "engine: RateLimit.PerSecond"},
		{name: "infinite rate", rate: Limit{math.Inf(1), 1}, wantErr: "engine: RateLimit.PerSecond"},
		{name: "burst 0 with a rate", rate: Limit{5, 0}, wantErr: "engine: RateLimit.Burst must be at least 1"},
		{name: "negative burst", rate: Limit{5, -1}, wantErr: "engine: RateLimit.Burst must not be negative"},
		{name: "burst without a rate", rate: Limit{0, 3}, wantErr: "engine: RateLimit.Burst is 3"},
		// Rates the bucket's nanoseconds would overflow on.
		{name: "slowest rate, biggest burst", rate: Limit{1e-3, 1000}},
		{name: "rate under one per 1000 s", rate: Limit{1e-10, 1}, wantErr: "engine: RateLimit.PerSecond must be 0 (no limit) or at least"},
		{name: "one a year", rate: Limit{1.0 / (365 * 24 * 3600), 1}, wantErr: "engine: RateLimit.PerSecond must be 0 (no limit) or at least"},
		{name: "burst refilling in over 10^6 s", rate: Limit{1, 1 << 40}, wantErr: "engine: RateLimit.Burst 1099511627776 refills in"},
		{name: "taint rate: burst 0", taint: map[string]Limit{"k": {1, 0}}, wantErr: `engine: TaintRateLimits["k"].Burst`},
		{name: "taint rate: empty key", taint: map[string]Limit{"": {1, 1}}, wantErr: "engine: TaintRateLimits has an empty taint key"},
		{name: "fraction above 1", brake: Brake{Fraction: 1.5}, wantErr: "engine: Brake.Fraction"},
		{name: "negative fraction", brake: Brake{Fraction: -0.1}, wantErr: "engine: Brake.Fraction"},
		{name: "NaN zone fraction", brake: Brake{ZoneFraction: math.NaN()}, wantErr: "engine: Brake.ZoneFraction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateBudgets(tt.rate, tt.taint, tt.brake)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error starting %q", err, tt.wantErr)
			}
		})
	}
}

func TestCauses(t *testing.T) {
	now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *metav1.Time { tm := metav1.NewTime(now.Add(-d)); return &tm }
	secs := func(s int64) *int64 { return &s }
	taints := []v1.Taint{
		{Key: "a", Effect: v1.TaintEffectNoExecute, TimeAdded: ago(time.Minute)},
		{Key: "b", Effect: v1.TaintEffectNoExecute, TimeAdded: ago(time.Minute)},
		{Key: "b", Value: "x", Effect: v1.TaintEffectNoExecute, TimeAdded: ago(time.Minute)},
		{Key: "c", Effect: v1.TaintEffectNoSchedule, TimeAdded: ago(time.Minute)},
	}
	tol := func(key string, s int64) v1.Toleration {
		return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(s)}
	}
	tests := []struct {
		name  string
		tols  []v1.Toleration
		src   DeadlineSource
		since time.Time
		want  []string
	}{
		{"nothing tolerated: every NoExecute key, once", nil, FromTimeAdded, time.Time{}, []string{"a", "b"}},
		{"a tolerated for long, b not at all", []v1.Toleration{tol("a", 3600)}, FromTimeAdded, time.Time{}, []string{"b"}},
		{"a ran out, b for long", []v1.Toleration{tol("a", 30), tol("b", 3600)}, FromTimeAdded, time.Time{}, []string{"a"}},
		{"both ran out", []v1.Toleration{tol("a", 30), tol("b", 60)}, FromTimeAdded, time.Time{}, []string{"a", "b"}},
		{"none due yet", []v1.Toleration{tol("a", 90), tol("b", 90)}, FromTimeAdded, time.Time{}, nil},
		{"FromObservation counts from since, not TimeAdded", []v1.Toleration{tol("a", 30), tol("b", 90)}, FromObservation, now.Add(-45 * time.Second), []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rules{source: tt.src}
			got := r.causes(nil, []Binding{{Holder: "h", Tolerations: tt.tols}}, [][]v1.Taint{taints}, []string{"g"}, tt.since, now)
			var keys []string
			for _, c := range got {
				if c.group != "g" {
					t.Errorf("cause %v: got group %q, want the holder's, g", c, c.group)
				}
				keys = append(keys, c.key)
			}
			if !slices.Equal(keys, tt.want) {
				t.Errorf("got %v, want %v", keys, tt.want)
			}
		})
	}

	// A target on two holders: each binding has its own tolerations and its holder's group;
	// a key that is due on both comes once per holder.
	t.Run("two bindings", func(t *testing.T) {
		bindings := []Binding{
			{Holder: "h1", Tolerations: []v1.Toleration{tol("a", 3600)}},
			{Holder: "h2", Tolerations: []v1.Toleration{tol("a", 30), tol("b", 3600)}},
		}
		got := rules{}.causes(nil, bindings, [][]v1.Taint{taints, taints}, []string{"g1", "g2"}, time.Time{}, now)
		want := []cause{{"b", "g1", "h1"}, {"a", "g2", "h2"}}
		if !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
}

// TestBucketAtTheBounds hands out slots from buckets at the bounds validate allows: at most
// Burst at once, each later one after the one before, none before now (no overflow).
func TestBucketAtTheBounds(t *testing.T) {
	now := bucketT0.UnixNano()
	for _, l := range []Limit{{1e-3, 1}, {1e-3, 1000}, {1e6, 1e12}, {1, 1e6}} {
		t.Run(fmt.Sprintf("%v a second, burst %d", l.PerSecond, l.Burst), func(t *testing.T) {
			if err := l.validate("RateLimit"); err != nil {
				t.Fatalf("got %v, want a valid limit", err)
			}
			b := newBucket(l)
			atNow := 0
			prev := int64(-1)
			for i := range 2000 {
				s := reserve([]*bucket{b}, now) - now
				if s < 0 || s < prev {
					t.Fatalf("slot %d: got now%+d ns, after now%+d ns for slot %d: want neither before now nor before it", i, s, prev, i-1)
				}
				if s == 0 {
					atNow++
				}
				prev = s
			}
			if want := min(l.Burst, 2000); atNow != want {
				t.Errorf("got %d slots at once, want Burst %d", atNow, want)
			}
		})
	}
}
