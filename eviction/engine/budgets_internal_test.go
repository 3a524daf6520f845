package engine

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidateBudgets(t *testing.T) {
	census := censusFunc(func(Cause, []Reach) []Reach { return nil })
	tests := []struct {
		name    string
		rate    Limit
		taint   map[string]Limit
		brake   Brake
		opts    Options // the other budgets
		wantErr string  // "" for valid
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
		{name: "floors", brake: Brake{Holders: 3, ZoneHolders: 2}},
		{name: "negative floor", brake: Brake{ZoneHolders: -1}, wantErr: "engine: Brake.Holders (0) and Brake.ZoneHolders (-1)"},
		{name: "full disruption: a rate", brake: Brake{FullDisruption: FullDisruption{Rate: Limit{1, 1}}}},
		{name: "full disruption: pause and a rate", brake: Brake{FullDisruption: FullDisruption{Pause: true, Rate: Limit{1, 1}}}, wantErr: "engine: Brake.FullDisruption: Pause and Rate are exclusive"},
		{name: "full disruption: a bad rate", brake: Brake{FullDisruption: FullDisruption{Rate: Limit{1, 0}}}, wantErr: "engine: Brake.FullDisruption.Rate.Burst"},
		{name: "in flight", opts: Options{InFlight: InFlight{Max: 5, Fraction: 0.1}}},
		{name: "in flight: negative", opts: Options{InFlight: InFlight{Max: -1}}, wantErr: "engine: InFlight.Max (-1)"},
		{name: "in flight: fraction above 1", opts: Options{InFlight: InFlight{Fraction: 2}}, wantErr: "engine: InFlight.Max (0)"},
		{name: "namespace window", opts: Options{NamespaceLimit: Window{Max: 5, Per: time.Minute}}},
		{name: "namespace window without a span", opts: Options{NamespaceLimit: Window{Max: 5}}, wantErr: "engine: NamespaceLimit: Max (5)"},
		{name: "owner window without a max", opts: Options{OwnerLimit: Window{Per: time.Minute}}, wantErr: "engine: OwnerLimit: Max (0)"},
		{name: "loop damping", opts: Options{LoopDamping: LoopDamping{Window: time.Hour}}},
		{name: "loop damping: negative window", opts: Options{LoopDamping: LoopDamping{Window: -time.Hour}}, wantErr: "engine: LoopDamping.Window"},
		{name: "loop damping: bad backoff", opts: Options{LoopDamping: LoopDamping{Window: time.Hour, Backoff: Backoff{Base: -1}}}, wantErr: "engine: Backoff: Base (-1ns)"},
		{name: "confirm", opts: Options{Confirm: Confirm{Fraction: 0.5, MinTargets: 3, Census: census}}},
		{name: "confirm without a census", opts: Options{Confirm: Confirm{Fraction: 0.5}}, wantErr: "engine: Confirm.Fraction is set without a Confirm.Census"},
		{name: "confirm: NaN", opts: Options{Confirm: Confirm{Fraction: math.NaN(), Census: census}}, wantErr: "engine: Confirm.Fraction"},
		{name: "confirm: negative minimum", opts: Options{Confirm: Confirm{Fraction: 0.5, MinTargets: -1, Census: census}}, wantErr: "engine: Confirm.MinTargets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.RateLimit, o.TaintRateLimits, o.Brake = tt.rate, tt.taint, tt.brake
			err := o.validateBudgets()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error starting %q", err, tt.wantErr)
			}
		})
	}
}

// censusFunc adapts a function to a Census.
type censusFunc func(c Cause, into []Reach) []Reach

func (f censusFunc) Reach(c Cause, into []Reach) []Reach { return f(c, into) }
