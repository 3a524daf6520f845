package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/taintevict/taintevict/eviction/engine"
)

// budgetFlags are the controller's settings a what-if simulates: its budgets against mass
// eviction, where its countdowns start, whether Lt and Gt match, and its mode. They take
// the controller's flags' meaning (examples/controller: -eviction-rate, -eviction-burst,
// -taint-rate, -brake-fraction, -brake-zone-fraction, -deadline-source,
// -comparison-operators, -mode); the defaults are the controller's.
type budgetFlags struct {
	rate           float64
	burst          int
	taintRates     []string
	brake          float64
	zoneBrake      float64
	deadlineSource string
	comparison     bool
	mode           string
}

// define defines the flags on fs; withMode adds --mode (what-if's: explain has no
// PodDisruptionBudgets to look at).
func (b *budgetFlags) define(fs *pflag.FlagSet, withMode bool) {
	fs.Float64Var(&b.rate, "rate", 0, "simulate a controller that evicts at most this many pods a second (its -eviction-rate; 0: no limit)")
	fs.IntVar(&b.burst, "burst", 0, "with --rate: how many pods may go at once (its -eviction-burst; default: the rate, rounded up)")
	fs.StringArrayVar(&b.taintRates, "taint-rate", nil, "KEY=RATE[/BURST]: at most RATE evictions a second caused by NoExecute taints with KEY (its -taint-rate); repeat for more keys")
	fs.Float64Var(&b.brake, "brake-fraction", 0, "simulate the brake that pauses a taint key's evictions while more than this fraction of the nodes carry it, in (0, 1] (its -brake-fraction; 0: off)")
	fs.Float64Var(&b.zoneBrake, "brake-zone-fraction", 0, "the same within each zone, the topology.kubernetes.io/zone label (its -brake-zone-fraction; 0: off)")
	fs.StringVar(&b.deadlineSource, "deadline-source", "time-added", "where countdowns start: time-added (the taint's TimeAdded, the controller's default) or observation (when the controller first sees it, kube-controller-manager's rule: counted from now)")
	fs.BoolVar(&b.comparison, "comparison-operators", false, "let tolerations with the operators Lt and Gt match (the controller's -comparison-operators)")
	b.mode = "delete"
	if !withMode {
		return
	}
	fs.StringVar(&b.mode, "mode", "delete", "the controller's -mode: delete, or evict, to also tell which evictions a PodDisruptionBudget would refuse at that moment (needs list on poddisruptionbudgets)")
}

// options returns the engine options the flags describe, or a usage error.
func (b budgetFlags) options() (engine.Options, error) {
	var o engine.Options
	switch {
	case !(b.rate >= 0) || math.IsInf(b.rate, 0):
		return o, usageError("--rate must be 0 (no limit) or a number above 0, got %g", b.rate)
	case b.burst < 0:
		return o, usageError("--burst must not be negative, got %d", b.burst)
	case b.burst > 0 && b.rate == 0:
		return o, usageError("--burst needs --rate")
	case b.mode != "delete" && b.mode != "evict":
		return o, usageError("--mode must be delete or evict, got %q", b.mode)
	}
	if b.rate > 0 {
		o.RateLimit = engine.Limit{PerSecond: b.rate, Burst: b.burst}
		if o.RateLimit.Burst == 0 {
			o.RateLimit.Burst = secondsWorth(b.rate)
		}
	}
	for _, s := range b.taintRates {
		key, l, err := parseTaintRate(s)
		if err != nil {
			return o, usageError("--taint-rate %q: %v", s, err)
		}
		if o.TaintRateLimits == nil {
			o.TaintRateLimits = map[string]engine.Limit{}
		}
		if _, dup := o.TaintRateLimits[key]; dup {
			return o, usageError("--taint-rate: %s given twice", key)
		}
		o.TaintRateLimits[key] = l
	}
	o.Brake = engine.Brake{Fraction: b.brake, ZoneFraction: b.zoneBrake}
	switch b.deadlineSource {
	case "time-added":
	case "observation":
		o.DeadlineSource = engine.FromObservation
	default:
		return o, usageError("--deadline-source must be time-added or observation, got %q", b.deadlineSource)
	}
	o.Tolerations.ComparisonOperators = b.comparison
	return o, nil
}

// parseTaintRate parses KEY=RATE or KEY=RATE/BURST.
func parseTaintRate(s string) (string, engine.Limit, error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return "", engine.Limit{}, fmt.Errorf("want KEY=RATE or KEY=RATE/BURST")
	}
	rateText, burstText, hasBurst := strings.Cut(value, "/")
	rate, err := strconv.ParseFloat(rateText, 64)
	if err != nil || !(rate > 0) || math.IsInf(rate, 0) {
		return "", engine.Limit{}, fmt.Errorf("the rate must be a number above 0, got %q", rateText)
	}
	l := engine.Limit{PerSecond: rate, Burst: secondsWorth(rate)}
	if hasBurst {
		if l.Burst, err = strconv.Atoi(burstText); err != nil || l.Burst < 1 {
			return "", engine.Limit{}, fmt.Errorf("the burst must be a whole number, at least 1, got %q", burstText)
		}
	}
	return key, l, nil
}

// secondsWorth is the burst of a rate given without one: a second's worth, at least 1, as
// the controller's.
func secondsWorth(rate float64) int { return int(max(1, math.Ceil(min(rate, math.MaxInt32)))) }
