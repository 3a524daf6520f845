package engine

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/tolerations"
)

// DeadlineSource says where an eviction's countdown starts.
type DeadlineSource uint8

const (
	// FromTimeAdded, the default: a taint's countdown starts at the earlier of its
	// TimeAdded and when it was first seen on that holder. A restarted Engine, or a new
	// leader, thus acts at the same deadlines for every taint with a TimeAdded
	// ([tolerations.Deadline]), up to a second early (TimeAdded is kept to the second).
	FromTimeAdded DeadlineSource = iota
	// FromObservation is kube-controller-manager's rule: the countdown starts when the
	// Engine first schedules the eviction, again at every restart
	// ([tolerations.ObservedDeadline]).
	FromObservation
)

// MinActWorkers and DefaultMaxActWorkers bound the act workers that follow the Actuator
// ([Options.ActWorkers]); DefaultActTimeout is the default of [Options.ActTimeout].
const (
	MinActWorkers        = 8
	DefaultMaxActWorkers = 128
	DefaultActTimeout    = 30 * time.Second
)

// Options configures an [Engine]. Each field's zero value is the default it names; the
// budgets (RateLimit to Confirm) are off by default. [New] rejects a negative count of
// workers and a budget out of range with an error that names the option.
type Options struct {
	// Clock tells the time and runs the timers; nil means the real clock. TimeAdded is read
	// on its time line: on a fake clock, give taints TimeAdded values of the fake time.
	Clock clock.Clock
	// Workers is how many goroutines process updates, 0 meaning 8: holders hashed onto them
	// by name, targets by their holder ([Source.Locate]), so that one holder's updates are
	// processed in order and before its targets'.
	Workers int
	// ActWorkers is how many Actuator calls may run at once; a positive value pins it. 0
	// makes it follow the Actuator's throughput from [MinActWorkers] (MaxActWorkers if
	// smaller) up to MaxActWorkers: it grows while more calls in flight complete more a
	// second, and backs off on calls that fail for load ([IsOverload]); see [Engine.ActWorkers].
	ActWorkers int
	// MaxActWorkers caps ActWorkers that follow the Actuator; 0 means [DefaultMaxActWorkers].
	MaxActWorkers int
	// ActTimeout bounds each Actuator call: its context is cancelled after that long, with
	// the cause [ErrActTimeout], and the call counts as failed. 0 means [DefaultActTimeout];
	// negative, no bound.
	ActTimeout time.Duration
	// Backoff paces the retries of a failed eviction and of a failed Source lookup.
	Backoff Backoff
	// Unreachable, when not nil, says whether an Actuator's error means that what it acts
	// through could not be reached ([Engine.RetryUnreachable]). It is called under the
	// Engine's locks: it must be safe for concurrent use, quick, and never call the Engine.
	Unreachable func(err error) bool
	// Observer, when not nil, is told every decision.
	Observer Observer
	// Tolerations says how tolerations match taints: kube's node rules (the zero value) or
	// its device rules ([tolerations.DeviceRules]), and whether Lt and Gt are enabled.
	Tolerations tolerations.Options
	// DeadlineSource chooses where countdowns start; the zero value is FromTimeAdded.
	DeadlineSource DeadlineSource
	// DryRun makes the Engine call no Actuator: every decision is still made and reported,
	// and a due eviction is reported Succeeded with dryRun true.
	DryRun bool

	// RateLimit bounds all evictions ([Limit]). A due eviction that finds no token waits for
	// its slot, in deadline order; one cancelled gives its slot back; only the first
	// attempt takes one.
	RateLimit Limit
	// TaintRateLimits bounds, per taint key, the evictions that a NoExecute taint with that
	// key makes due; one due because of several waits for the slowest of its limits and
	// RateLimit. nil limits nothing.
	TaintRateLimits map[string]Limit
	// Brake pauses the evictions a taint key causes while too many holders carry it.
	Brake Brake
	// InFlight bounds the evictions acted on and not yet gone.
	InFlight InFlight
	// NamespaceLimit bounds each namespace's evictions within a span of time ([Window]).
	NamespaceLimit Window
	// OwnerLimit bounds each workload's ([Target.Owner]) evictions within a span of time
	// ([Window]); targets without an owner are not bounded.
	OwnerLimit Window
	// LoopDamping slows down a workload whose re-created targets are evicted again and again.
	LoopDamping LoopDamping
	// Confirm holds the evictions of a taint that would evict too many targets at once until
	// an operator confirms it.
	Confirm Confirm
}

func (o Options) normalize() (Options, error) {
	errs := []error{o.Backoff.validate(), o.validateBudgets()}
	if o.Workers < 0 || o.ActWorkers < 0 || o.MaxActWorkers < 0 {
		errs = append(errs, fmt.Errorf("engine: Workers (%d), ActWorkers (%d) and MaxActWorkers (%d) must not be negative", o.Workers, o.ActWorkers, o.MaxActWorkers))
	}
	if o.DeadlineSource > FromObservation {
		errs = append(errs, fmt.Errorf("engine: unknown DeadlineSource %d", o.DeadlineSource))
	}
	if o.Tolerations.Rules > tolerations.DeviceRules {
		errs = append(errs, fmt.Errorf("engine: unknown Tolerations.Rules %d", o.Tolerations.Rules))
	}
	if err := errors.Join(errs...); err != nil {
		return o, err
	}
	o.Clock = cmp.Or(o.Clock, clock.Clock(clock.RealClock{}))
	o.Observer = cmp.Or(o.Observer, Observer(NopObserver{}))
	o.Workers = cmp.Or(o.Workers, 8)
	o.MaxActWorkers = cmp.Or(o.MaxActWorkers, DefaultMaxActWorkers)
	o.ActTimeout = cmp.Or(o.ActTimeout, DefaultActTimeout)
	return o, nil
}

// Backoff is how long an [Engine] waits to try again after a failure (of an Actuator call,
// of the recheck, of a Source lookup): the n-th retry waits Base·2^(n-1), at most Cap, less
// a random fraction of up to Jitter of that. The zero value waits 100 ms, doubling up to 2
// minutes, with a jitter of 0.2.
type Backoff struct {
	// Base is the delay before the first retry. 0 means 100 ms; negative is an error.
	Base time.Duration
	// Cap is the longest delay. 0 means 2 minutes (or Base, if larger); negative is an error.
	Cap time.Duration
	// Jitter is the largest fraction of a delay taken away at random, at most 1. 0 means
	// 0.2; a negative value turns jitter off.
	Jitter float64
}

// Delay returns the wait after the given failure (1 for the first; smaller counts as 1),
// jitter included. Zero fields take their defaults; out-of-range ones, which New rejects,
// count as zero. It is safe for concurrent use.
func (b Backoff) Delay(failures int) time.Duration { return b.delay(failures, rand.Float64()) }

// delay returns the delay after failures with jitter as the random draw, in [0, 1).
func (b Backoff) delay(failures int, jitter float64) time.Duration {
	base, limit, j := b.Base, b.Cap, b.Jitter
	if base <= 0 {
		base = 100 * time.Millisecond
	}
	if limit <= 0 {
		limit = 2 * time.Minute
	}
	limit = max(limit, base)
	switch {
	case j == 0 || j > 1:
		j = 0.2
	case j < 0:
		j = 0
	}
	d := base
	for i := 1; i < failures && d < limit; i++ {
		if d > limit/2 {
			d = limit // doubling would pass the cap, or overflow for caps over 146 years
			break
		}
		d *= 2
	}
	return d - time.Duration(jitter*j*float64(d))
}

func (b Backoff) validate() error {
	if b.Base < 0 || b.Cap < 0 || b.Jitter > 1 {
		return fmt.Errorf("engine: Backoff: Base (%v) and Cap (%v) must not be negative, Jitter (%v) must be at most 1", b.Base, b.Cap, b.Jitter)
	}
	return nil
}
