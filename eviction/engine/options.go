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
	// TimeAdded and the time the taint was first seen on that holder: a TimeAdded in the
	// future (clock skew) counts from first sight and stays pinned there; after a restart,
	// first sight is the restart. A target that comes to the holder later counts from the
	// same start. A restarted Engine, or a new leader, thus acts at the same deadlines as
	// the one it replaced, for every taint with a TimeAdded that is not in the future. See
	// [tolerations.Deadline]. The API server keeps TimeAdded to the second, so a deadline
	// can fall up to a second earlier than tolerationSeconds after the taint really came.
	FromTimeAdded DeadlineSource = iota
	// FromObservation is kube-controller-manager's rule: the countdown starts when the
	// Engine first schedules the target's eviction, so every restart starts it again. See
	// [tolerations.ObservedDeadline].
	FromObservation
)

// The bounds of the act workers when their number follows the Actuator
// (Options.ActWorkers 0).
const (
	// MinActWorkers is where the number of act workers starts, and the least it goes down
	// to.
	MinActWorkers = 8
	// DefaultMaxActWorkers is the most act workers that run when Options.MaxActWorkers is
	// 0.
	DefaultMaxActWorkers = 128
)

// DefaultActTimeout bounds one Actuator call when Options.ActTimeout is zero.
const DefaultActTimeout = 30 * time.Second

// Options configures an [Engine]. The zero value gives the real clock, 8 event workers, act
// workers that follow the actuator's throughput (from [MinActWorkers] up to
// [DefaultMaxActWorkers]), actuator calls bounded by [DefaultActTimeout] and retried forever
// with the default [Backoff], deadlines from TimeAdded, kube's node rules for tolerations,
// no observer, real actions, and no budget: no rate limit, brake, bound or hold.
type Options struct {
	// Clock tells the time and runs the timers. nil means the real clock. Deadlines count
	// from the taints' TimeAdded on this clock's time line: on a fake clock, give taints
	// TimeAdded values of the fake clock's time, since a TimeAdded of the real time, on a
	// fake clock set later than it, is long past and evicts at once (and, on a fake clock
	// set earlier, counts from first sight instead).
	Clock clock.Clock
	// Workers is how many goroutines process holder and target updates. Holders are hashed
	// onto them by name, and targets by the holder [Source.Locate] gives, so that one
	// holder's updates are processed in order and before updates of its targets. 0 means
	// 8; negative is an error.
	Workers int
	// ActWorkers is how many Actuator calls may run at once. 0 means that it follows the
	// Actuator's throughput, between MinActWorkers and MaxActWorkers: it starts at
	// MinActWorkers (the first calls go at once), grows while more calls in flight complete
	// more calls a second, holds where they stop rising (a server at its capacity, or a
	// client's rate limiter: more calls would only wait), and backs off when calls fail
	// for the server's load ([IsOverload]); calls answered in under a millisecond (an
	// Actuator in the same process) keep it at MinActWorkers. A positive value pins it;
	// negative is an error. [Engine.ActWorkers] tells the current number.
	ActWorkers int
	// MaxActWorkers caps ActWorkers when it follows the actuator, for memory and fairness.
	// 0 means DefaultMaxActWorkers; negative is an error. It is ignored when ActWorkers is
	// set.
	MaxActWorkers int
	// ActTimeout bounds each Actuator call: its context is cancelled after that long, with
	// the cause [ErrActTimeout], and the call counts as failed. 0 means DefaultActTimeout;
	// negative means no bound.
	ActTimeout time.Duration
	// Backoff paces retries: the attempts of a failed eviction, and the retries of an
	// update whose Source lookup failed. An eviction is never dropped: it is retried until
	// it succeeds or is cancelled.
	Backoff Backoff
	// Unreachable, when not nil, says whether an Actuator's error means that what the
	// Actuator acts through could not be reached (an API server that is down: a refused
	// connection, a broken one), rather than a failure of this target. Such an eviction is
	// retried after the Backoff like any other, and also at once (once per attempt the
	// Backoff allows) when the caller calls [Engine.RetryUnreachable] on seeing the backend
	// answer again: after an outage of a minute, the retries need not wait out a backoff
	// that grew to a minute. It is called after each failed attempt, under the Engine's
	// locks: it must be safe for concurrent use, return quickly, and never call the Engine.
	// nil keeps no such evictions.
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

	// RateLimit bounds the evictions of the Engine: at most RateLimit.PerSecond a second,
	// in bursts of at most RateLimit.Burst. An eviction that is due and finds no token
	// waits for the next one, in the schedule (see [Engine.Pending]), and evictions due
	// together take their tokens in deadline order. A waiting eviction holds the time of its
	// token: one cancelled gives its token back to the next eviction that asks, while those
	// already waiting keep their times. Only an eviction's first attempt takes a token; its
	// retries are paced by Backoff. The zero Limit limits nothing.
	RateLimit Limit
	// TaintRateLimits bounds, per taint key, the evictions that a NoExecute taint with that
	// key makes due (by not being tolerated, or by a toleration that ran out), as the
	// device-taint KEP's EvictionsPerSecond does. An eviction due because of several taints
	// waits for a token of each limit that applies, and of RateLimit: for the slowest.
	// Keys not listed are not limited; nil limits nothing.
	TaintRateLimits map[string]Limit
	// Brake pauses the evictions caused by a taint key while too many holders carry it; see
	// [Brake]. The zero Brake never pauses.
	Brake Brake
	// InFlight bounds the evictions acted on and not yet gone; see [InFlight]. The zero
	// InFlight bounds nothing.
	InFlight InFlight
	// NamespaceLimit bounds the evictions of each namespace within a span of time; see
	// [Window]. The zero Window bounds nothing.
	NamespaceLimit Window
	// OwnerLimit bounds the evictions of each workload ([Target.Owner]) within a span of
	// time; see [Window]. Targets without an owner are not bounded. The zero Window bounds
	// nothing.
	OwnerLimit Window
	// LoopDamping slows down a workload whose re-created targets are evicted again and
	// again; see [LoopDamping]. The zero LoopDamping damps nothing.
	LoopDamping LoopDamping
	// Confirm holds the evictions of a taint that would evict too many targets at once
	// until an operator confirms it; see [Confirm]. The zero Confirm holds nothing.
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
