package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/taintevict/taintevict/eviction/engine/internal/budget"
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

// limits reports whether l limits anything.
func (l Limit) limits() bool { return l.PerSecond > 0 }

// validate checks l, the option named field, within the bounds its bucket's arithmetic
// needs (budget.Rate.Validate).
func (l Limit) validate(field string) error {
	if err := budget.Rate(l).Validate(field); err != nil {
		return fmt.Errorf("engine: %w", err)
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

// Cause is a NoExecute taint that makes a target due: the taint's Key, on the holder named
// Holder, whose group is Group. A [Pauser] is told the causes of each eviction that falls
// due.
type Cause struct {
	Holder string
	Key    string
	Group  string
}

// Pauser holds back evictions that are due, by budgets that the caller counts and the
// Engine cannot: the device taint adapter, for one, pauses the evictions of a
// DeviceTaintRule that would evict too large a share of the pods that use devices. Set it in
// Options.Pauser.
//
// The Engine asks Paused about every eviction that is due and has not yet passed the gate
// (its first attempt), after [Options.Brake] and before the rate limits, with the causes
// that make it due (every NoExecute taint it does not tolerate, or whose toleration has run
// out, on each of its holders). While Paused returns true, the eviction waits, as one the
// brake holds: the Observer is told Delayed with [ReasonPaused], [Engine.Pending] lists it
// with Delayed ReasonPaused, and it stays until the caller calls [Engine.Resume] with the
// scope Paused named; the Engine then asks again. An update that cancels or moves the
// eviction lets go of the hold, as for the brake.
//
// Paused is called from the Engine's act workers, under the Engine's locks: it must be safe
// for concurrent use, return quickly (O(1) or O(causes): no listing, no request), never
// block, and never call the Engine. It must not keep causes, whose storage the Engine
// reuses. The Engine asks and records the hold under the same lock that Resume takes, so a
// caller that changes what Paused answers and then calls Resume never leaves an eviction
// held by a scope it released.
type Pauser interface {
	Paused(target Ref, causes []Cause) (scope string, paused bool)
}

// PauserFunc adapts a function to a [Pauser].
type PauserFunc func(target Ref, causes []Cause) (scope string, paused bool)

var _ Pauser = PauserFunc(nil)

// Paused calls f(target, causes).
func (f PauserFunc) Paused(target Ref, causes []Cause) (string, bool) { return f(target, causes) }

// pauserBudget asks the caller's Pauser, with the causes as the Engine's type, in storage
// reused under the gate's lock.
type pauserBudget struct {
	p    Pauser
	told []Cause
}

func (pb *pauserBudget) paused(r *budget.Request) (string, bool) {
	pb.told = pb.told[:0]
	for _, c := range r.Causes {
		pb.told = append(pb.told, Cause(c))
	}
	return pb.p.Paused(Ref{Namespace: r.Key.Namespace, Name: r.Key.Name, UID: r.UID, Holder: r.Holder}, pb.told)
}

// gate returns the budgets o sets, in the order they are asked: the brake, the Pauser,
// the rate limits; nil when o sets none. A new budget is a file of package budget, a field
// of Options, and a line here.
func (o Options) gate() *budget.Gate {
	var bs []budget.Budget
	if b := budget.NewBrake(o.Brake.Fraction, o.Brake.ZoneFraction); b != nil {
		bs = append(bs, b)
	}
	if o.Pauser != nil {
		pb := &pauserBudget{p: o.Pauser}
		bs = append(bs, budget.Pauser{Paused: pb.paused})
	}
	perKey := make(map[string]budget.Rate, len(o.TaintRateLimits))
	for k, l := range o.TaintRateLimits {
		perKey[k] = budget.Rate(l)
	}
	if t := budget.NewTokens(budget.Rate(o.RateLimit), perKey); t != nil {
		bs = append(bs, t)
	}
	return budget.NewGate(bs...)
}
