package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/taintevict/taintevict/eviction"
)

// budgetFlags are the command line's budgets against mass eviction: the Manager's
// Options.RateLimit, TaintRateLimits and Brake. The zero value sets none.
type budgetFlags struct {
	rate       float64
	burst      int
	taintRates map[string]eviction.Limit
	brake      float64
	zoneBrake  float64
}

// define defines the budget flags on fs.
func (b *budgetFlags) define(fs *flag.FlagSet) {
	fs.Float64Var(&b.rate, "eviction-rate", 0, "evict at most this many pods a second, in all (0: no limit)")
	fs.IntVar(&b.burst, "eviction-burst", 0, "with -eviction-rate: how many pods may be evicted at once (default: the rate, rounded up)")
	fs.Func("taint-rate", "KEY=RATE[/BURST]: evict at most RATE pods a second because of NoExecute taints with KEY, BURST at once (default: RATE rounded up); repeat for more keys", b.addTaintRate)
	fs.Float64Var(&b.brake, "brake-fraction", 0, "pause the evictions a taint key causes while more than this fraction of the nodes carry it, until fewer do: in (0, 1] (0: off)")
	fs.Float64Var(&b.zoneBrake, "brake-zone-fraction", 0, "the same within each zone (the topology.kubernetes.io/zone label), for the pods on that zone's nodes (0: off)")
}

// addTaintRate parses one -taint-rate value, KEY=RATE or KEY=RATE/BURST.
func (b *budgetFlags) addTaintRate(s string) error {
	key, value, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return errors.New("want KEY=RATE or KEY=RATE/BURST")
	}
	if _, dup := b.taintRates[key]; dup {
		return fmt.Errorf("%s given twice", key)
	}
	rateText, burstText, hasBurst := strings.Cut(value, "/")
	rate, err := strconv.ParseFloat(rateText, 64)
	if err != nil || !(rate > 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("%s: the rate must be a number above 0, got %q", key, rateText)
	}
	burst := defaultBurst(rate)
	if hasBurst {
		if burst, err = strconv.Atoi(burstText); err != nil || burst < 1 {
			return fmt.Errorf("%s: the burst must be a whole number, at least 1, got %q", key, burstText)
		}
	}
	if b.taintRates == nil {
		b.taintRates = map[string]eviction.Limit{}
	}
	b.taintRates[key] = eviction.Limit{PerSecond: rate, Burst: burst}
	return nil
}

// defaultBurst is the burst of a rate given without one: a second's worth, at least 1.
func defaultBurst(rate float64) int {
	return int(max(1, math.Ceil(min(rate, math.MaxInt32))))
}

// validate checks the values the flag package cannot.
func (b budgetFlags) validate() error {
	switch {
	case !(b.rate >= 0) || math.IsInf(b.rate, 0):
		return fmt.Errorf("-eviction-rate must be 0 (no limit) or a number above 0, got %g", b.rate)
	case b.burst < 0:
		return fmt.Errorf("-eviction-burst must not be negative, got %d", b.burst)
	case b.burst > 0 && b.rate == 0:
		return errors.New("-eviction-burst needs -eviction-rate")
	case b.brake != 0 && !(b.brake > 0 && b.brake <= 1):
		return fmt.Errorf("-brake-fraction must be in (0, 1], or 0 for off, got %g", b.brake)
	case b.zoneBrake != 0 && !(b.zoneBrake > 0 && b.zoneBrake <= 1):
		return fmt.Errorf("-brake-zone-fraction must be in (0, 1], or 0 for off, got %g", b.zoneBrake)
	}
	return nil
}

// options returns the Manager's budget options.
func (b budgetFlags) options() (rate eviction.Limit, taintRates map[string]eviction.Limit, brake eviction.Brake) {
	if b.rate > 0 {
		rate = eviction.Limit{PerSecond: b.rate, Burst: b.burst}
		if rate.Burst == 0 {
			rate.Burst = defaultBurst(b.rate)
		}
	}
	return rate, b.taintRates, eviction.Brake{Fraction: b.brake, ZoneFraction: b.zoneBrake}
}
