package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

func TestBudgetFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want eviction.Options // its budgets
	}{
		{name: "none: no budget"},
		{name: "a rate; its burst defaults to a second's worth", args: []string{"-eviction-rate=5"}, want: eviction.Options{RateLimit: eviction.Limit{PerSecond: 5, Burst: 5}}},
		{name: "a slow rate: a burst of 1", args: []string{"-eviction-rate=0.2"}, want: eviction.Options{RateLimit: eviction.Limit{PerSecond: 0.2, Burst: 1}}},
		{name: "a rate and a burst", args: []string{"-eviction-rate=5", "-eviction-burst=20"}, want: eviction.Options{RateLimit: eviction.Limit{PerSecond: 5, Burst: 20}}},
		{name: "taint rates, with and without a burst",
			args: []string{"-taint-rate=node.kubernetes.io/unreachable=2/4", "-taint-rate=example.com/maintenance=0.5"},
			want: eviction.Options{TaintRateLimits: map[string]eviction.Limit{"node.kubernetes.io/unreachable": {PerSecond: 2, Burst: 4}, "example.com/maintenance": {PerSecond: 0.5, Burst: 1}}}},
		{name: "the brake", args: []string{"-brake-fraction=0.5", "-brake-zone-fraction=0.55"}, want: eviction.Options{Brake: eviction.Brake{Fraction: 0.5, ZoneFraction: 0.55}}},
		{name: "the brake's floors", args: []string{"-brake-holders=10", "-brake-zone-holders=3"}, want: eviction.Options{Brake: eviction.Brake{Holders: 10, ZoneHolders: 3}}},
		{name: "a fully disrupted zone pauses", args: []string{"-full-disruption=pause"}, want: eviction.Options{Brake: eviction.Brake{FullDisruption: eviction.FullDisruption{Pause: true}}}},
		{name: "a fully disrupted zone's rate", args: []string{"-full-disruption=0.1"}, want: eviction.Options{Brake: eviction.Brake{FullDisruption: eviction.FullDisruption{Rate: eviction.Limit{PerSecond: 0.1, Burst: 1}}}}},
		{name: "in flight", args: []string{"-in-flight=20", "-in-flight-fraction=0.1"}, want: eviction.Options{InFlight: eviction.InFlight{Max: 20, Fraction: 0.1}}},
		{name: "windows", args: []string{"-namespace-limit=10/1m", "-owner-limit=1/30s"},
			want: eviction.Options{NamespaceLimit: eviction.Window{Max: 10, Per: time.Minute}, OwnerLimit: eviction.Window{Max: 1, Per: 30 * time.Second}}},
		{name: "loop damping, its backoff by default", args: []string{"-loop-window=15m"},
			want: eviction.Options{LoopDamping: eviction.LoopDamping{Window: 15 * time.Minute, Backoff: eviction.Backoff{Base: 10 * time.Second, Cap: 10 * time.Minute}}}},
		{name: "loop damping's backoff", args: []string{"-loop-window=15m", "-loop-backoff-base=1m", "-loop-backoff-cap=1h"},
			want: eviction.Options{LoopDamping: eviction.LoopDamping{Window: 15 * time.Minute, Backoff: eviction.Backoff{Base: time.Minute, Cap: time.Hour}}}},
		{name: "confirm", args: []string{"-confirm-fraction=0.2", "-confirm-min-pods=50"}, want: eviction.Options{Confirm: eviction.Confirm{Fraction: 0.2, MinTargets: 50}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := flagsOf(t, tc.args...).controllerOptions()
			var got eviction.Options
			got.RateLimit, got.TaintRateLimits, got.Brake = opts.Manager.RateLimit, opts.Manager.TaintRateLimits, opts.Manager.Brake
			got.InFlight, got.NamespaceLimit, got.OwnerLimit = opts.Manager.InFlight, opts.Manager.NamespaceLimit, opts.Manager.OwnerLimit
			got.LoopDamping, got.Confirm = opts.Manager.LoopDamping, opts.Manager.Confirm
			assert.Equal(t, tc.want, got)
			// What the flags accept, the Manager accepts.
			got.DryRun = true
			_, err := eviction.New(nil, &evictiontest.Cache{}, got)
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
		{[]string{"-brake-zone-holders=-1"}, "-brake-holders and -brake-zone-holders must not be negative"},
		{[]string{"-full-disruption=stop"}, `invalid value "stop" for flag -full-disruption: want pause or RATE[/BURST]`},
		{[]string{"-full-disruption=1/0"}, "the burst must be a whole number"},
		{[]string{"-in-flight=-1"}, "-in-flight must not be negative"},
		{[]string{"-in-flight-fraction=2"}, "-in-flight-fraction must be in (0, 1]"},
		{[]string{"-namespace-limit=10"}, `invalid value "10" for flag -namespace-limit: want N/DURATION`},
		{[]string{"-namespace-limit=0/1m"}, "want N/DURATION with N at least 1"},
		{[]string{"-owner-limit=1/soon"}, "want N/DURATION with a positive DURATION"},
		{[]string{"-owner-limit=1/-1m"}, "want N/DURATION with a positive DURATION"},
		{[]string{"-loop-window=-1m"}, "-loop-window must not be negative"},
		{[]string{"-loop-backoff-base=1m", "-loop-backoff-cap=1s"}, "-loop-backoff-cap (1s) not less"},
		{[]string{"-confirm-fraction=1.5"}, "-confirm-fraction must be in (0, 1]"},
		{[]string{"-confirm-min-pods=5"}, "-confirm-min-pods needs -confirm-fraction"},
		// Values the flags parse and the engine refuses: the flag is named, exit code 2.
		{[]string{"-eviction-rate=0.0001"}, "-eviction-rate and -eviction-burst: eviction: engine: RateLimit.PerSecond must be 0 (no limit) or at least 0.001"},
		{[]string{"-eviction-rate=0.001", "-eviction-burst=5000"}, "-eviction-rate and -eviction-burst: eviction: engine: RateLimit.Burst 5000 refills in 5000000 s"},
		{[]string{"-taint-rate=k=0.0001"}, `-taint-rate k: eviction: engine: TaintRateLimits["k"].PerSecond must be 0 (no limit) or at least 0.001`},
		{[]string{"-full-disruption=0.0001"}, "-full-disruption: eviction: engine: Brake.FullDisruption.Rate.PerSecond"},
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
