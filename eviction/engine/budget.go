package engine

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
)

// Limit is a token bucket: at most PerSecond evictions a second on average, and at most
// Burst at once after a quiet spell. The zero Limit limits nothing.
type Limit struct {
	// PerSecond is the sustained rate; 0 means no limit. Otherwise it must be at least
	// 0.001 (one eviction per 1,000 s).
	PerSecond float64
	// Burst is how many evictions may go at the same moment; it must be at least 1 when
	// PerSecond is set, and 0 when it is not. A full burst must refill in at most 10^6 s
	// (Burst/PerSecond, about 11.6 days).
	Burst int
}

// The bounds of a Limit keep the bucket's arithmetic in nanoseconds far from overflow:
// slots at most 10^12 ns apart, a burst at most 10^15 ns ahead, and a million evictions
// waiting reach 10^18 ns, under the 9.2*10^18 of an int64.
const (
	minPerSecond    = 1e-3
	maxBurstSeconds = 1e6
)

// limits reports whether l limits anything.
func (l Limit) limits() bool { return l.PerSecond > 0 }

func (l Limit) validate(field string) error {
	switch {
	case math.IsNaN(l.PerSecond) || math.IsInf(l.PerSecond, 0) || l.PerSecond < 0:
		return fmt.Errorf("engine: %s.PerSecond must be a finite number, 0 or more: got %v", field, l.PerSecond)
	case l.Burst < 0:
		return fmt.Errorf("engine: %s.Burst must not be negative: got %d", field, l.Burst)
	case l.PerSecond > 0 && l.Burst == 0:
		return fmt.Errorf("engine: %s.Burst must be at least 1 when %s.PerSecond is set", field, field)
	case l.PerSecond == 0 && l.Burst != 0:
		return fmt.Errorf("engine: %s.Burst is %d but %s.PerSecond is 0 (no limit)", field, l.Burst, field)
	case l.PerSecond > 0 && l.PerSecond < minPerSecond:
		return fmt.Errorf("engine: %s.PerSecond must be 0 (no limit) or at least %v: got %v", field, minPerSecond, l.PerSecond)
	case l.PerSecond > 0 && float64(l.Burst)/l.PerSecond > maxBurstSeconds:
		return fmt.Errorf("engine: %s.Burst %d refills in %.0f s at %s.PerSecond %v, more than the %.0f s allowed", field, l.Burst, float64(l.Burst)/l.PerSecond, field, l.PerSecond, maxBurstSeconds)
	}
	return nil
}

// Brake pauses mass eviction: when more than a fraction of the holders carry a NoExecute
// taint with the same key, the evictions caused by that key wait, since so many nodes (or
// devices, or clusters) going bad at once is more likely a partition, a broken health check
// or a bug than a failure of each one. It resumes once fewer than the fraction carry it;
// evictions that fell due meanwhile then go, under the rate limits, in deadline order. The
// zero Brake never pauses.
//
// The fractions count the holders the Engine was told about through [Engine.HolderUpdated]:
// all of them, and those of each group ([Holder.Group]: a node's zone, a device's pool;
// holders without one form one group). A target due because of several taints, or on
// several holders, waits while any of them is paused.
//
// The brake counts each holder when its update arrives, so it holds back what falls due
// after it trips: a target that tolerates nothing, on one of the first holders tainted, may
// go before the rest of the outage is seen. Most pods tolerate the unreachable and not-ready
// taints for 300 s (the DefaultTolerationSeconds admission plugin gives them that), long
// enough. For the same reason, feed a new Engine the holders (let the informers sync) before
// Run.
type Brake struct {
	// Fraction pauses the evictions caused by a taint key while more than this fraction of
	// all known holders carry a NoExecute taint with that key. 0 means no such rule; otherwise
	// it must be in (0, 1], and 1 never pauses.
	Fraction float64
	// ZoneFraction does the same within each group (a node's zone), for the targets on that
	// group's holders: the node lifecycle controller's rule that a zone with most of its
	// nodes down is more likely cut off than broken. 0 means no zone rule; otherwise it must be in (0, 1].
	ZoneFraction float64
}

// brakes reports whether b can pause anything.
func (b Brake) brakes() bool { return b.Fraction > 0 || b.ZoneFraction > 0 }

func (b Brake) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"Brake.Fraction", b.Fraction}, {"Brake.ZoneFraction", b.ZoneFraction}} {
		if f.v != 0 && !(f.v > 0 && f.v <= 1) { // NaN fails both
			return fmt.Errorf("engine: %s must be 0 (off) or in (0, 1]: got %v", f.name, f.v)
		}
	}
	return nil
}

// validateBudgets checks the rate limits and the brake of o.
func validateBudgets(rate Limit, taintRates map[string]Limit, b Brake) error {
	errs := []error{rate.validate("RateLimit"), b.validate()}
	for _, key := range slices.Sorted(maps.Keys(taintRates)) { // one order, one message
		l := taintRates[key]
		if key == "" {
			errs = append(errs, errors.New("engine: TaintRateLimits has an empty taint key"))
			continue
		}
		errs = append(errs, l.validate(fmt.Sprintf("TaintRateLimits[%q]", key)))
	}
	return errors.Join(errs...)
}
