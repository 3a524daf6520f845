package engine

import (
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
	// TimeAdded and the time the taint was first seen on that holder (a TimeAdded in the
	// future counts from first sight, and stays pinned there). A restarted Engine, or a new
	// leader, thus acts at the same deadlines as the one it replaced, for every taint with
	// a TimeAdded; see [tolerations.Deadline]. The API server keeps TimeAdded to the
	// second, so a deadline can fall up to a second early.
	FromTimeAdded DeadlineSource = iota
	// FromObservation is kube-controller-manager's rule: the countdown starts when the
	// Engine first schedules the target's eviction, so every restart starts it again. See
	// [tolerations.ObservedDeadline].
	FromObservation
)

// The bounds of the act workers when their number follows the Actuator (Options.ActWorkers
// 0): MinActWorkers is where it starts and the least it goes down to; DefaultMaxActWorkers
// is the most when Options.MaxActWorkers is 0.
const (
	MinActWorkers        = 8
	DefaultMaxActWorkers = 128
)

// DefaultActTimeout bounds one Actuator call when Options.ActTimeout is zero.
const DefaultActTimeout = 30 * time.Second

// Options configures an [Engine]. The zero value gives the real clock, 8 event workers, act
// workers that follow the actuator's throughput (from [MinActWorkers] up to
// [DefaultMaxActWorkers]), actuator calls bounded by [DefaultActTimeout] and retried forever
// with the default [Backoff], deadlines from TimeAdded, kube's node rules for tolerations,
// no observer, real actions, and no budget. A negative count of workers, and a budget out
// of range, are errors of [New] that name the option.
type Options struct {
	// Clock tells the time and runs the timers; nil means the real clock. Deadlines count
	// from the taints' TimeAdded on this clock's time line: on a fake clock, give taints
	// TimeAdded values of the fake clock's time.
	Clock clock.Clock
	// Workers is how many goroutines process holder and target updates: holders hashed onto
	// them by name, targets by the holder [Source.Locate] gives, so that one holder's
	// updates are processed in order and before its targets'. 0 means 8.
	Workers int
	// ActWorkers is how many Actuator calls may run at once. 0 means that it follows the
	// Actuator's throughput between MinActWorkers and MaxActWorkers: it starts at
	// MinActWorkers, grows while more calls in flight complete more calls a second, holds
	// where they stop rising (a server at its capacity, or a client's rate limiter), and
	// backs off when calls fail for the server's load ([IsOverload]); calls answered in under
	// a millisecond keep it at MinActWorkers. A positive value pins it. [Engine.ActWorkers]
	// tells the current number.
	ActWorkers int
	// MaxActWorkers caps ActWorkers when it follows the actuator; 0 means
	// DefaultMaxActWorkers.
	MaxActWorkers int
	// ActTimeout bounds each Actuator call: its context is cancelled after that long, with
	// the cause [ErrActTimeout], and the call counts as failed. 0 means DefaultActTimeout;
	// negative means no bound.
	ActTimeout time.Duration
	// Backoff paces the retries of a failed eviction and of an update whose Source lookup
	// failed. An eviction is retried until it succeeds or is cancelled.
	Backoff Backoff
	// Unreachable, when not nil, says whether an Actuator's error means that what it acts
	// through could not be reached (an API server that is down), rather than a failure of
	// this target: such an eviction is also retried at once when the caller calls
	// [Engine.RetryUnreachable]. It is called under the Engine's locks: it must be safe for
	// concurrent use, return quickly, and never call the Engine.
	Unreachable func(err error) bool
	// Observer, when not nil, is told every decision; see [Observer].
	Observer Observer
	// Tolerations says how tolerations match taints: kube's node rules (the zero value) or
	// its device rules ([tolerations.DeviceRules]), and whether Lt and Gt are enabled.
	Tolerations tolerations.Options
	// DeadlineSource chooses where countdowns start; the zero value is FromTimeAdded.
	DeadlineSource DeadlineSource
	// DryRun makes the Engine call no Actuator: every decision is still made and reported,
	// and an eviction that is due is reported as Succeeded with dryRun true.
	DryRun bool

	// RateLimit bounds the Engine's evictions to RateLimit.PerSecond a second, in bursts of
	// RateLimit.Burst. A due eviction that finds no token waits for its slot (see
	// [Engine.Pending]); evictions due together take their tokens in deadline order, and
	// one cancelled gives its slot back. Only the first attempt takes a token. The zero
	// Limit limits nothing.
	RateLimit Limit
	// TaintRateLimits bounds, per taint key, the evictions that a NoExecute taint with that
	// key makes due, as the device-taint KEP's EvictionsPerSecond does; an eviction due
	// because of several waits for the slowest of its limits and RateLimit. nil limits
	// nothing.
	TaintRateLimits map[string]Limit
	// Brake pauses the evictions caused by a taint key while too many holders carry it; see
	// [Brake].
	Brake Brake
	// InFlight bounds the evictions acted on and not yet gone; see [InFlight].
	InFlight InFlight
	// NamespaceLimit bounds the evictions of each namespace within a span of time; see
	// [Window].
	NamespaceLimit Window
	// OwnerLimit bounds the evictions of each workload ([Target.Owner]) within a span of
	// time; see [Window]. Targets without an owner are not bounded.
	OwnerLimit Window
	// LoopDamping slows down a workload whose re-created targets are evicted again and
	// again; see [LoopDamping].
	LoopDamping LoopDamping
	// Confirm holds the evictions of a taint that would evict too many targets at once
	// until an operator confirms it; see [Confirm].
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
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Workers == 0 {
		o.Workers = 8
	}
	if o.MaxActWorkers == 0 {
		o.MaxActWorkers = DefaultMaxActWorkers
	}
	if o.ActTimeout == 0 {
		o.ActTimeout = DefaultActTimeout
	}
	if o.Observer == nil {
		o.Observer = NopObserver{}
	}
	return o, nil
}
