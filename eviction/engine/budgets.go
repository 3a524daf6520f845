package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

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
// floors (Holders, ZoneHolders) pause a key carried by at least that many holders, whatever
// the fraction: a fraction of a small pool is too coarse (0.55 of 3 nodes trips at 2). The
// zero Brake never pauses.
//
// The fractions and floors count the holders the Engine was told about through
// [Engine.HolderUpdated]: all of them, and those of each group ([Holder.Group]: a node's
// zone, a device's pool; holders without one form one group). A target due because of
// several taints, or on several holders, waits while any of them is paused.
//
// A group all of whose holders carry the key is fully disrupted, as kube's node lifecycle
// controller says of a zone whose nodes are all NotReady; [FullDisruption] says what its
// evictions of that key do.
//
// The brake counts each holder when its update arrives, so it holds back what falls due
// after it trips: a target that tolerates nothing, on one of the first holders tainted, may
// go before the rest of the outage is seen (most pods tolerate the unreachable and
// not-ready taints for 300 s: the DefaultTolerationSeconds admission plugin gives them
// that). An Engine with a Brake lets nothing go until [Engine.Synced]: a new Engine, or a
// new leader, started in the middle of an outage counts every holder before it acts.
type Brake struct {
	// Fraction pauses the evictions caused by a taint key while more than this fraction of
	// all known holders carry a NoExecute taint with that key. 0 means no such rule; otherwise
	// it must be in (0, 1], and 1 never pauses.
	Fraction float64
	// ZoneFraction does the same within each group (a node's zone), for the targets on that
	// group's holders: the node lifecycle controller's rule that a zone with most of its
	// nodes down is more likely cut off than broken. 0 means no zone rule; otherwise it must be in (0, 1].
	ZoneFraction float64
	// Holders pauses the evictions caused by a taint key while at least this many of all
	// known holders carry it, whatever their fraction. 0 means no such rule; negative is an
	// error.
	Holders int
	// ZoneHolders does the same within each group. 0 means no such rule; negative is an
	// error.
	ZoneHolders int
	// FullDisruption says what the evictions of a fully disrupted group do. The zero value
	// leaves them to the other rules.
	FullDisruption FullDisruption
}

// FullDisruption is what happens to the evictions a taint key causes in a group (a zone)
// all of whose holders carry it: they pause until one of its holders no longer carries it
// (Pause), or they go at a rate of their own (Rate), the group's fraction and floor not
// holding them, as kube's node lifecycle controller evicts from a zone that is down
// altogether at its healthy rate rather than its reduced one. Rate comes on top of
// Options.RateLimit and TaintRateLimits, and Brake.Fraction and Holders still pause: all
// zones down at once is likelier the controller's own partition (kube's "master
// disruption"). Pause and Rate are exclusive; the zero value does neither.
type FullDisruption struct {
	// Pause pauses the group's evictions of the key.
	Pause bool
	// Rate is the group's own rate for the key's evictions; the zero Limit is none.
	Rate Limit
}

func (b Brake) validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
	}{{"Brake.Fraction", b.Fraction}, {"Brake.ZoneFraction", b.ZoneFraction}} {
		if f.v != 0 && !(f.v > 0 && f.v <= 1) { // NaN fails both
			errs = append(errs, fmt.Errorf("engine: %s must be 0 (off) or in (0, 1]: got %v", f.name, f.v))
		}
	}
	if b.Holders < 0 || b.ZoneHolders < 0 {
		errs = append(errs, fmt.Errorf("engine: Brake.Holders (%d) and Brake.ZoneHolders (%d) must not be negative", b.Holders, b.ZoneHolders))
	}
	if b.FullDisruption.Pause && b.FullDisruption.Rate.limits() {
		errs = append(errs, errors.New("engine: Brake.FullDisruption: Pause and Rate are exclusive"))
	}
	errs = append(errs, b.FullDisruption.Rate.validate("Brake.FullDisruption.Rate"))
	return errors.Join(errs...)
}

// validateBudgets checks the budgets of o.
func (o Options) validateBudgets() error {
	errs := []error{o.RateLimit.validate("RateLimit"), o.Brake.validate(), o.InFlight.validate(),
		o.NamespaceLimit.validate("NamespaceLimit"), o.OwnerLimit.validate("OwnerLimit"), o.LoopDamping.validate(), o.Confirm.validate()}
	taintRates := o.TaintRateLimits
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
// Holder, whose group is Group. A [Census] is asked about the causes of each eviction that
// falls due.
type Cause struct {
	Holder string
	Key    string
	Group  string
}

// gate returns the budgets o sets, in the order they are asked: the wait for Synced (with
// the budgets that count holders or targets), Confirm, the brake, InFlight, NamespaceLimit,
// OwnerLimit, LoopDamping, the rate limits; nil when o sets none. Those that hold until
// released come first, those that count what went next, and the rate limits, which reserve
// a slot, last (a wait after a reservation would let an eviction go later than its slot).
// kept counts the evictions the Engine keeps, O(1), for InFlight.Fraction. A new budget is
// a file of package budget, a field of Options, and a line here.
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

// InFlight bounds the evictions in flight: acted on (the Actuator called) and not yet
// gone. An eviction counts from its first Actuator call until the Source shows its target
// gone or bound elsewhere, or it is closed without an action, or its target is leaving
// ([Target.Leaving]) and its [Target.GoneBy] has passed: a pod being deleted counts until
// it is gone or its grace period is over, whichever comes first, so that a node that cannot
// confirm the removal (an unreachable one, whose pods stay Terminating) does not hold its
// places for good. Its retries count as one. An eviction that falls due while the bound is
// reached waits, reported Delayed with [ReasonInFlight], in line in the order they fell
// due; each that ends lets the first in line go. The zero InFlight bounds nothing.
//
// It bounds, as a PodDisruptionBudget does, the targets on their way out at once; unlike
// the descheduler's limits, which count the evictions it asked for in one run whatever
// became of them, and like Karpenter's disruption budgets, which count the nodes being
// disrupted until they are gone. It counts the evictions this Engine acted on: after a
// restart or a change of leader, the targets a former one acted on and that are still
// leaving do not count.
type InFlight struct {
	// Max is the most evictions in flight at once. 0 means no such bound; negative is an
	// error.
	Max int
	// Fraction bounds them to this fraction of the targets the Engine keeps an eviction of
	// (open, in flight, or acted on and not yet gone: those its taints evict, which
	// [Engine.Len] counts), at least one. 0 means no such bound; otherwise it must be in
	// (0, 1]. With Max too, the smaller bound holds.
	Fraction float64
}

func (f InFlight) validate() error {
	if f.Max < 0 || f.Fraction != 0 && !(f.Fraction > 0 && f.Fraction <= 1) {
		return fmt.Errorf("engine: InFlight.Max (%d) must not be negative, InFlight.Fraction (%v) must be 0 (off) or in (0, 1]", f.Max, f.Fraction)
	}
	return nil
}

// Window bounds the evictions of one namespace ([Options.NamespaceLimit]) or of one
// workload ([Options.OwnerLimit]): at most Max let go within any span of Per. An eviction
// that finds the window full waits until it opens, reported Delayed with
// [ReasonNamespaceLimit] or [ReasonOwnerLimit]; those that wait for one window are woken as
// it opens, as many as it lets go, in the order they came. An eviction counts when it is
// let go (its first Actuator call), whatever becomes of it. The zero Window bounds
// nothing.
type Window struct {
	// Max is the most evictions within any span of Per; at least 1 when Per is set.
	Max int
	// Per is the span; positive when Max is set.
	Per time.Duration
}

func (w Window) validate(field string) error {
	if w == (Window{}) {
		return nil
	}
	if w.Max < 1 || w.Per <= 0 {
		return fmt.Errorf("engine: %s: Max (%d) must be at least 1 and Per (%v) positive, or both zero (off)", field, w.Max, w.Per)
	}
	return nil
}

// LoopDamping slows down eviction loops (kubernetes#89068): a controller that re-creates
// the target it lost on a holder that evicts it again turns eviction into a loop. A target
// re-created under the same owner ([Target.Owner]) and due again within Window of an
// eviction of that owner waits until that eviction is Backoff.Delay(n) old, n counting the
// re-created targets of the owner evicted in a row; it is reported Delayed with
// [ReasonRecreated]. A target counts as re-created when it was created ([Target.Created])
// after the owner's latest eviction, or at most a second before it (the API server keeps
// creation times to the second). Targets without an owner or a creation time, and the
// other targets of the owner (its replicas on other holders), go as usual. The zero
// LoopDamping damps nothing.
type LoopDamping struct {
	// Window is how long after its backoff would end a re-created target of the owner is
	// still damped: the damping span of an eviction runs from it until its owner's next
	// backoff, then Window, has passed, so a backoff longer than Window still counts the
	// next re-created target in a row. An owner that goes a span without an eviction starts
	// its count again. 0 means off; negative is an error.
	Window time.Duration
	// Backoff is the wait of the n-th re-created target in a row; its zero Base and Cap
	// mean 10 s and 10 minutes here (its Jitter, as always, 0.2).
	Backoff Backoff
}

// backoff returns d.Backoff with LoopDamping's defaults.
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

// Confirm holds the evictions of a taint that would evict more than a fraction of all the
// targets at once, until an operator confirms it, or until it would evict fewer: the guard
// that kubernetes#141422 asks for, where one DeviceTaintRule with an empty selector evicted
// every pod that used a device, and what made Karmada turn NoExecute eviction off by
// default (karmada#5150). A held eviction is reported Delayed with [ReasonUnconfirmed], and
// [Engine.Pending] lists it so.
//
// The Engine cannot count all targets, or what a taint would evict, without listing them;
// the caller's [Census] counts them as its informers' handlers see them, before the Engine
// hears of the change, and tells the Engine ([Engine.Recounted]) when the counts or the
// confirmation of a scope changed. eviction.Manager and the device side of clientgo have a
// census of their own. An eviction is held when each taint that makes it due is held: an
// eviction that another taint makes due goes.
//
// The zero Confirm holds nothing.
type Confirm struct {
	// Fraction holds a scope that would evict more than this fraction of all targets. 0
	// means off; otherwise it must be in (0, 1].
	Fraction float64
	// MinTargets: a scope that would evict fewer targets never holds, so that a small
	// fleet can lose its few. 0 means 1; negative is an error.
	MinTargets int
	// Census counts the scopes; it must be set with Fraction.
	Census Census
}

// Exceeds reports whether a scope that would evict evicts of targets exceeds c: more than
// Fraction of them, and at least MinTargets. A caller that shows why a scope is held (a
// DeviceTaintRule's status) says it with this rule.
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

// Census counts, for [Confirm], what each taint would evict. A scope is what puts taints
// on holders, as the caller sees it: a taint key on nodes, a DeviceTaintRule, the taints
// of a pool's ResourceSlices.
//
// Reach appends to into, and returns, the scopes that put the taint of cause on its holder
// (cause.Holder), with their counts as last counted: what each would evict (the targets
// bound to the holders it taints, not leaving, that do not tolerate it forever), of how
// many targets in all, and whether an operator confirmed it. A scope not counted yet holds
// its evictions until the caller calls [Engine.Recounted] with its name. A cause of no
// scope the census knows holds nothing.
//
// Reach is called from the Engine's act workers under the Engine's locks, as a [Pauser]
// is: it must be safe for concurrent use, O(1) per scope (no listing, no request), never
// block, and never call the Engine.
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
	// Counted: the census has counted it. One not counted holds its evictions.
	Counted bool
}

// censusBudget asks the caller's Census, converting to and from the budget's types in
// storage reused under the gate's lock.
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
