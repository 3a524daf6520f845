package budgetflags

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// TestBudgetText: /debug/pending names each budget an eviction waits at with the flags that
// set it.
func TestBudgetText(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flags  Flags
		reason engine.Reason
		want   string
	}{
		{"rate with its default burst", Flags{rate: 2.5}, engine.ReasonRateLimited, "the rate limit: -eviction-rate 2.5/s (burst 3)"},
		{"rate and taint rates, keys in order", Flags{rate: 1, burst: 4, taintRates: map[string]eviction.Limit{"b": {PerSecond: 2, Burst: 2}, "a": {PerSecond: 1, Burst: 1}}},
			engine.ReasonRateLimited, "the rate limit: -eviction-rate 1/s (burst 4), -taint-rate a=1/1, -taint-rate b=2/2"},
		{"a fully disrupted zone's rate", Flags{fullDisruption: eviction.FullDisruption{Rate: eviction.Limit{PerSecond: 0.5, Burst: 1}}}, engine.ReasonRateLimited, "the rate limit: -full-disruption 0.5/1"},
		{"the brake", Flags{zoneBrake: 0.5, zoneHolders: 3, fullDisruption: eviction.FullDisruption{Pause: true}}, engine.ReasonPaused,
			"the brake: -brake-zone-fraction 0.5, -brake-zone-holders 3, -full-disruption pause"},
		{"in flight", Flags{inFlight: 10}, engine.ReasonInFlight, "evictions in flight: -in-flight 10"},
		{"namespace", Flags{namespaceLimit: eviction.Window{Max: 5, Per: time.Minute}}, engine.ReasonNamespaceLimit, "the namespace limit: -namespace-limit 5/1m0s"},
		{"owner", Flags{ownerLimit: eviction.Window{Max: 1, Per: time.Hour}}, engine.ReasonOwnerLimit, "the workload limit: -owner-limit 1/1h0m0s"},
		{"loop damping", Flags{loopWindow: time.Minute, loopBase: time.Second, loopCap: time.Minute}, engine.ReasonRecreated,
			"loop damping: -loop-window 1m0s, -loop-backoff-base 1s, -loop-backoff-cap 1m0s"},
		{"confirm", Flags{confirm: 0.2, confirmMin: 10}, engine.ReasonUnconfirmed,
			"a hold until confirmed with the annotation " + eviction.ConfirmAnnotation + ": -confirm-fraction 0.2, -confirm-min-pods 10"},
		{"a reason of no budget", Flags{}, engine.Reason("other"), "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.flags.Text(tc.reason); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// parse parses args as the budget flags.
func parse(t *testing.T, args ...string) (Flags, error) {
	t.Helper()
	var b Flags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	b.Define(fs)
	if err := fs.Parse(args); err != nil {
		return b, err
	}
	return b, b.Validate()
}

// TestValidateNamesTheFlag: a value the engine refuses is an error that names the flag
// that set it, and the engine's option.
func TestValidateNamesTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-eviction-rate=0.0001"}, []string{"-eviction-rate and -eviction-burst: ", "RateLimit.PerSecond must be 0 (no limit) or at least 0.001"}},
		{[]string{"-eviction-rate=0.001", "-eviction-burst=5000"}, []string{"-eviction-rate and -eviction-burst: ", "RateLimit.Burst 5000 refills in 5000000 s"}},
		{[]string{"-taint-rate=example.com/down=0.0001"}, []string{"-taint-rate example.com/down: ", `TaintRateLimits["example.com/down"].PerSecond`}},
		{[]string{"-full-disruption=0.0001"}, []string{"-full-disruption: ", "Brake.FullDisruption.Rate.PerSecond"}},
		{[]string{"-brake-fraction=1.5"}, []string{"-brake-fraction must be in (0, 1]"}},
		{[]string{"-in-flight=-1"}, []string{"-in-flight must not be negative"}},
		{[]string{"-namespace-limit=0/1m"}, []string{`invalid value "0/1m" for flag -namespace-limit`}},
		{[]string{"-confirm-fraction=2"}, []string{"-confirm-fraction must be in (0, 1]"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parse(t, tc.args...)
			if err == nil {
				t.Fatalf("got no error, want one")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
		})
	}
	b, err := parse(t, "-eviction-rate=0.001", "-eviction-burst=1000", "-taint-rate=k=2/4", "-full-disruption=1", "-loop-window=1m")
	if err != nil {
		t.Errorf("the bounds themselves: got %v, want no error", err)
	}
	var o eviction.Options
	b.Apply(&o)
	if got, want := o.RateLimit, (eviction.Limit{PerSecond: 0.001, Burst: 1000}); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}
