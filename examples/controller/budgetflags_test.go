package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

func TestBudgetFlags(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		rate  eviction.Limit
		taint map[string]eviction.Limit
		brake eviction.Brake
	}{
		{name: "none: no budget"},
		{name: "a rate; its burst defaults to a second's worth", args: []string{"-eviction-rate=5"}, rate: eviction.Limit{PerSecond: 5, Burst: 5}},
		{name: "a slow rate: a burst of 1", args: []string{"-eviction-rate=0.2"}, rate: eviction.Limit{PerSecond: 0.2, Burst: 1}},
		{name: "a rate and a burst", args: []string{"-eviction-rate=5", "-eviction-burst=20"}, rate: eviction.Limit{PerSecond: 5, Burst: 20}},
		{name: "taint rates, with and without a burst",
			args:  []string{"-taint-rate=node.kubernetes.io/unreachable=2/4", "-taint-rate=example.com/maintenance=0.5"},
			taint: map[string]eviction.Limit{"node.kubernetes.io/unreachable": {PerSecond: 2, Burst: 4}, "example.com/maintenance": {PerSecond: 0.5, Burst: 1}}},
		{name: "the brake", args: []string{"-brake-fraction=0.5", "-brake-zone-fraction=0.55"}, brake: eviction.Brake{Fraction: 0.5, ZoneFraction: 0.55}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := flagsOf(t, tc.args...).controllerOptions()
			assert.Equal(t, tc.rate, opts.Manager.RateLimit)
			assert.Equal(t, tc.taint, opts.Manager.TaintRateLimits)
			assert.Equal(t, tc.brake, opts.Manager.Brake)
			// What the flags accept, the Manager accepts.
			_, err := eviction.New(nil, &evictiontest.Cache{}, eviction.Options{
				DryRun: true, RateLimit: opts.Manager.RateLimit, TaintRateLimits: opts.Manager.TaintRateLimits, Brake: opts.Manager.Brake,
			})
			assert.NoError(t, err)
		})
	}
}

func TestBadBudgetFlags(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-eviction-rate=-1"}, "-eviction-rate must be 0 (no limit) or a number above 0, got -1"},
		{[]string{"-eviction-rate=NaN"}, "-eviction-rate must be 0 (no limit) or a number above 0"},
		{[]string{"-eviction-rate=+Inf"}, "-eviction-rate must be 0 (no limit) or a number above 0"},
		{[]string{"-eviction-rate=5", "-eviction-burst=-1"}, "-eviction-burst must not be negative"},
		{[]string{"-eviction-burst=10"}, "-eviction-burst needs -eviction-rate"},
		{[]string{"-taint-rate=unreachable"}, `invalid value "unreachable" for flag -taint-rate: want KEY=RATE or KEY=RATE/BURST`},
		{[]string{"-taint-rate==5"}, "want KEY=RATE or KEY=RATE/BURST"},
		{[]string{"-taint-rate=k=0"}, "k: the rate must be a number above 0"},
		{[]string{"-taint-rate=k=fast"}, `k: the rate must be a number above 0, got "fast"`},
		{[]string{"-taint-rate=k=1/0"}, `k: the burst must be a whole number, at least 1, got "0"`},
		{[]string{"-taint-rate=k=1", "-taint-rate=k=2"}, "k given twice"},
		{[]string{"-brake-fraction=1.5"}, "-brake-fraction must be in (0, 1], or 0 for off, got 1.5"},
		{[]string{"-brake-fraction=-0.5"}, "-brake-fraction must be in (0, 1]"},
		{[]string{"-brake-zone-fraction=NaN"}, "-brake-zone-fraction must be in (0, 1]"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 2, run(tc.args, &stdout, &stderr))
			assert.Empty(t, stdout.String())
			assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}
