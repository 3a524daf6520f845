package engine

import (
	"math"
	"strings"
	"testing"
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
