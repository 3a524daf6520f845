package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/taintevict/taintevict/eviction/engine/internal/budget"
)

// Limit is a token bucket: at most PerSecond evictions a second on average (0: no limit;
// else at least 0.001), and at most Burst at once after a quiet spell (at least 1 with a
// rate, 0 without; a full burst refills in at most 10^6 s). The zero Limit limits nothing.
type Limit struct {
	PerSecond float64
	Burst     int
}

func (l Limit) validate(field string) error {
	if err := budget.Rate(l).Validate(field); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// Brake pauses mass eviction, as so many holders going bad at once is more likely a
// partition or a bug: while a NoExecute taint key is carried by more than a fraction of the
// holders, or by at least a floor of them, the evictions it causes wait; then what fell due
// goes, in deadline order. It counts the holders the Engine was told of, all and per
// [Holder.Group], as their updates arrive: a target on one of the first tainted may go
// before the rest of an outage is seen. A target due because of several taints or holders
// waits while any is paused. Nothing goes before [Engine.Synced]. The zero Brake never
// pauses.
type Brake struct {
	// Fraction pauses a key carried by more than this fraction of all holders: 0 (off) or
	// in (0, 1]; 1 never pauses.
	Fraction float64
	// ZoneFraction does the same within each group, for the targets on its holders: 0 (off)
	// or in (0, 1].
	ZoneFraction float64
	// Holders pauses a key carried by at least this many holders; 0 is off.
	Holders int
	// ZoneHolders does the same within each group; 0 is off.
	ZoneHolders int
	// FullDisruption says what the evictions of a group all of whose holders carry the key do.
	FullDisruption FullDisruption
}

// FullDisruption is what the evictions a taint key causes in a group all of whose holders
// carry it do: pause until one no longer does (Pause), or go at a rate of their own, on top
// of RateLimit and TaintRateLimits, that the group's fraction and floor do not hold (Rate),
// as kube evicts from a zone wholly down. Brake.Fraction and Holders still pause. Pause and
// Rate are exclusive; the zero value does neither.
type FullDisruption struct {
	Pause bool  // pause the group's evictions of the key
	Rate  Limit // the group's own rate for them; the zero Limit is none
}

func (b Brake) validate() error {
	errs := []error{fractionErr("Brake.Fraction", b.Fraction), fractionErr("Brake.ZoneFraction", b.ZoneFraction)}
	if b.Holders < 0 || b.ZoneHolders < 0 {
		errs = append(errs, fmt.Errorf("engine: Brake.Holders (%d) and Brake.ZoneHolders (%d) must not be negative", b.Holders, b.ZoneHolders))
	}
	if b.FullDisruption.Pause && b.FullDisruption.Rate.PerSecond > 0 {
		errs = append(errs, errors.New("engine: Brake.FullDisruption: Pause and Rate are exclusive"))
	}
	errs = append(errs, b.FullDisruption.Rate.validate("Brake.FullDisruption.Rate"))
	return errors.Join(errs...)
}

// fractionErr is the error of the option name, a fraction v out of 0 (off) and (0, 1].
func fractionErr(name string, v float64) error {
	if v != 0 && !(v > 0 && v <= 1) { // NaN fails both
		return fmt.Errorf("engine: %s must be 0 (off) or in (0, 1]: got %v", name, v)
	}
	return nil
}

func (o Options) validateBudgets() error {
	errs := []error{o.RateLimit.validate("RateLimit"), o.Brake.validate(), o.InFlight.validate(),
		o.NamespaceLimit.validate("NamespaceLimit"), o.OwnerLimit.validate("OwnerLimit"), o.LoopDamping.validate(), o.Confirm.validate()}
	taintRates := o.TaintRateLimits
	for _, key := range slices.Sorted(maps.Keys(taintRates)) { // one order, one message
		if key == "" {
			errs = append(errs, errors.New("engine: TaintRateLimits has an empty taint key"))
		} else {
			errs = append(errs, taintRates[key].validate(fmt.Sprintf("TaintRateLimits[%q]", key)))
		}
	}
	return errors.Join(errs...)
}

// Cause is a NoExecute taint that makes a target due: its Key, on the holder named Holder,
// of Group. A [Census] is asked about the causes of each eviction that falls due.
type Cause struct {
	Holder string
	Key    string
	Group  string
}

// gate returns the budgets o sets (nil for none) in the order they are asked: those that
// hold until released (Synced, Confirm, the brake), those that count what went (InFlight,
// the windows, LoopDamping), and last the rate limits, which reserve a slot that a later
// wait would make an eviction miss; and Synced (nil if no budget needs it). kept counts the
// evictions kept, for InFlight.Fraction.
func (o Options) gate(kept func() int) (*budget.Gate[*eviction], *budget.Synced) {
	var bs []budget.Budget
	add := func(b budget.Budget, on bool) {
		if on {
			bs = append(bs, b)
		}
	}
	brake := budget.NewBrake(budget.BrakeRules{
		Fraction: o.Brake.Fraction, GroupFraction: o.Brake.ZoneFraction,
		Holders: o.Brake.Holders, GroupHolders: o.Brake.ZoneHolders,
		FullPause: o.Brake.FullDisruption.Pause, FullRate: budget.Rate(o.Brake.FullDisruption.Rate),
	})
	var synced *budget.Synced
	if brake != nil || o.Confirm.Fraction > 0 {
		synced = new(budget.Synced)
		add(synced, true)
	}
	if c := o.Confirm; c.Fraction > 0 {
		cb := &censusBudget{c: c.Census}
		add(budget.NewConfirm(c.Fraction, c.MinTargets, cb.reach), true)
	}
	add(brake, brake != nil)
	inFlight := budget.NewInFlight(o.InFlight.Max, o.InFlight.Fraction, kept)
	add(inFlight, inFlight != nil)
	ns := budget.NewWindow(o.NamespaceLimit.Max, int64(o.NamespaceLimit.Per), string(ReasonNamespaceLimit), budget.NamespaceKey)
	add(ns, ns != nil)
	owner := budget.NewWindow(o.OwnerLimit.Max, int64(o.OwnerLimit.Per), string(ReasonOwnerLimit), budget.OwnerKey)
	add(owner, owner != nil)
	if d := o.LoopDamping; d.Window > 0 {
		backoff := d.backoff()
		add(budget.NewDamping(int64(d.Window), func(n int, jitter float64) int64 { return int64(backoff.delay(n, jitter)) }), true)
	}
	perKey := make(map[string]budget.Rate, len(o.TaintRateLimits))
	for k, l := range o.TaintRateLimits {
		perKey[k] = budget.Rate(l)
	}
	t := budget.NewTokens(budget.Rate(o.RateLimit), perKey, brake)
	add(t, t != nil)
	return budget.NewGate[*eviction](bs...), synced
}

// InFlight bounds, as a PodDisruptionBudget does, the targets on their way out at once. An
// eviction counts, its retries as one, from its first Actuator call until the Source shows
// the target gone or bound elsewhere, it is closed without an action, or the target is
// leaving ([Target.Leaving]) and its [Target.GoneBy] has passed (so that pods that stay
// Terminating on a dead node do not hold their places for good). A retry the brake or
// Confirm holds gives its place back, and takes one again when let go, as a new eviction
// would, counted again by the windows too. One due at the bound waits (Delayed,
// [ReasonInFlight]) in line in the order they fell due; each that ends lets the first go.
// Only this Engine's actions count, not a former one's. The zero InFlight bounds nothing.
type InFlight struct {
	// Max is the most evictions in flight at once; 0 is off.
	Max int
	// Fraction bounds them to this fraction, 0 (off) or in (0, 1], of the targets the
	// Engine keeps an eviction of ([Engine.Len]), at least one: a new eviction kept makes
	// room for those in line at once, and one dropped leaves the count before its place is
	// given back. With Max, the smaller holds.
	Fraction float64
}

func (f InFlight) validate() error {
	if f.Max < 0 || f.Fraction != 0 && !(f.Fraction > 0 && f.Fraction <= 1) {
		return fmt.Errorf("engine: InFlight.Max (%d) must not be negative, InFlight.Fraction (%v) must be 0 (off) or in (0, 1]", f.Max, f.Fraction)
	}
	return nil
}

// Window bounds the evictions of one namespace ([Options.NamespaceLimit]) or workload
// ([Options.OwnerLimit]): at most Max (at least 1) let go within any span of Per
// (positive). One that finds the window full waits until it opens (Delayed,
// [ReasonNamespaceLimit] or [ReasonOwnerLimit]), in the order they came. The zero Window
// bounds nothing.
type Window struct {
	Max int
	Per time.Duration
}

func (w Window) validate(field string) error {
	if w != (Window{}) && (w.Max < 1 || w.Per <= 0) {
		return fmt.Errorf("engine: %s: Max (%d) must be at least 1 and Per (%v) positive, or both zero (off)", field, w.Max, w.Per)
	}
	return nil
}

// LoopDamping slows down eviction loops (kubernetes#89068: a controller re-creates the
// target on a holder that evicts it again). A target of an owner ([Target.Owner]) created
// ([Target.Created]) after the owner's latest eviction, or at most a second before (creation
// times are whole seconds), and due within the owner's span (see Window), waits (Delayed,
// [ReasonRecreated]) until that eviction is Backoff's n-th delay old, n counting the owner's
// re-created targets evicted in a row; its jitter is drawn from the owner and n. Other
// targets go as usual. The zero LoopDamping damps nothing.
type LoopDamping struct {
	// Window is how long after its backoff would end a re-created target is still damped,
	// so that a backoff longer than Window still counts the next one in a row; an owner
	// that goes that long without an eviction starts its count again. 0 is off.
	Window time.Duration
	// Backoff is the wait of the n-th re-created target in a row; its zero Base and Cap
	// mean 10 s and 10 minutes here.
	Backoff Backoff
}

func (d LoopDamping) backoff() Backoff {
	b := d.Backoff
	if b.Base == 0 {
		b.Base = 10 * time.Second
	}
	if b.Cap == 0 {
		b.Cap = max(10*time.Minute, b.Base)
	}
	return b
}

func (d LoopDamping) validate() error {
	if d.Window < 0 {
		return fmt.Errorf("engine: LoopDamping.Window must not be negative: got %v", d.Window)
	}
	if err := d.Backoff.validate(); err != nil {
		return fmt.Errorf("%w (LoopDamping)", err)
	}
	return nil
}

// Confirm holds the evictions of a taint that would evict too many targets at once
// ([Confirm.Exceeds]) until an operator confirms it or it would evict fewer
// (kubernetes#141422: a DeviceTaintRule with an empty selector evicted every pod with a
// device). The caller's [Census] counts each scope. An eviction is held (Delayed,
// [ReasonUnconfirmed]) while each taint that makes it due is held; nothing goes before
// [Engine.Synced]. The zero Confirm holds nothing.
type Confirm struct {
	// Fraction holds a scope that would evict more than this fraction of all targets: 0
	// (off) or in (0, 1].
	Fraction float64
	// MinTargets: a scope that would evict fewer never holds, so that a small fleet can
	// lose its few. 0 means 1.
	MinTargets int
	// Census counts the scopes; it must be set with Fraction.
	Census Census
}

// Exceeds reports whether a scope that would evict evicts of targets exceeds c: more than
// Fraction of them, and at least MinTargets.
func (c Confirm) Exceeds(evicts, targets int) bool {
	return budget.Exceeds(c.Fraction, c.MinTargets, evicts, targets)
}

func (c Confirm) validate() error {
	switch {
	case c.Fraction != 0 && !(c.Fraction > 0 && c.Fraction <= 1):
		return fmt.Errorf("engine: Confirm.Fraction must be 0 (off) or in (0, 1]: got %v", c.Fraction)
	case c.MinTargets < 0:
		return fmt.Errorf("engine: Confirm.MinTargets must not be negative: got %d", c.MinTargets)
	case c.Fraction > 0 && c.Census == nil:
		return errors.New("engine: Confirm.Fraction is set without a Confirm.Census to count")
	}
	return nil
}

// Census counts, for [Confirm], what each scope would evict: a scope is what puts taints on
// holders, as the caller sees it (a taint key on nodes, a DeviceTaintRule). It calls
// [Engine.Recounted] when a scope's counts or confirmation change.
//
// Reach appends to into, and returns, the scopes that put cause's taint on cause.Holder,
// as last counted: what each would evict (the targets bound to the holders it taints, not
// leaving, that do not tolerate it forever), of how many in all, and whether it is
// confirmed. A cause of no scope holds nothing. Reach is called under the Engine's locks:
// it must be safe for concurrent use, O(1) per scope, never block, and never call the Engine.
type Census interface {
	Reach(cause Cause, into []Reach) []Reach
}

// Reach is one scope's counts, as [Census.Reach] gives them.
type Reach struct {
	// Scope names it, for [Engine.Recounted]; not empty.
	Scope string
	// Evicts is how many targets it would evict; Targets, how many there are in all.
	Evicts, Targets int
	// Confirmed: an operator confirmed it, and it holds nothing.
	Confirmed bool
	// Counted: the census has counted it; until then it holds its evictions.
	Counted bool
}

// censusBudget asks the caller's Census, in storage reused under the gate's lock.
type censusBudget struct {
	c   Census
	buf []Reach
}

func (cb *censusBudget) reach(c budget.Cause, into []budget.Reach) []budget.Reach {
	cb.buf = cb.c.Reach(Cause(c), cb.buf[:0])
	for _, r := range cb.buf {
		into = append(into, budget.Reach(r))
	}
	return into
}
