package engine

import (
	"cmp"
	"errors"
	"fmt"
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
	// second, and backs off on calls that fail for load ([IsOverload]).
	// [Engine.ActWorkers] tells where it is.
	ActWorkers int
	// MaxActWorkers caps ActWorkers that follow the Actuator; 0 means [DefaultMaxActWorkers].
	MaxActWorkers int
	// ActTimeout bounds each Actuator call: its context is cancelled after that long, with
	// the cause [ErrActTimeout], and the call counts as failed. 0 means [DefaultActTimeout];
	// negative, no bound.
	ActTimeout time.Duration
	// Backoff paces the retries of a failed eviction and of an update whose Source lookup
	// failed.
	Backoff Backoff
	// Unreachable, when not nil, says whether an Actuator's error means that what it acts
	// through could not be reached (see [Engine.RetryUnreachable]). It is called under the
	// Engine's locks: it must be safe for concurrent use, return quickly, and never call
	// the Engine.
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
