package eviction

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// DeadlineSource says where an eviction's countdown starts: the engine's, see
// [engine.DeadlineSource].
type DeadlineSource = engine.DeadlineSource

const (
	// FromTimeAdded, the default: a taint's countdown starts at the earlier of its
	// TimeAdded and the time the taint was first seen on that node: a TimeAdded in the
	// future (clock skew) counts from first sight and stays pinned there; after a restart,
	// first sight is the restart. A pod that comes to the node later counts from the same
	// start. A restarted Manager, or a new leader, thus evicts at the same deadlines as the
	// one it replaced, for every taint with a TimeAdded that is not in the future. See
	// [tolerations.Deadline]. The API server keeps TimeAdded to the second, so a deadline
	// can fall up to a second earlier than tolerationSeconds after the taint really came.
	FromTimeAdded = engine.FromTimeAdded
	// FromObservation is kube-controller-manager's rule: the countdown starts when the
	// Manager first schedules the pod's eviction, so every restart starts it again. See
	// [tolerations.ObservedDeadline].
	FromObservation = engine.FromObservation
)

// DefaultDeleteTimeout bounds one Deleter call when Options.DeleteTimeout is zero.
const DefaultDeleteTimeout = engine.DefaultActTimeout

// Limit is a token bucket: at most PerSecond evictions a second on average, and at most
// Burst at once after a quiet spell; see [engine.Limit]. The zero Limit limits nothing.
type Limit = engine.Limit

// Brake pauses the evictions caused by a taint key while more than a fraction of the nodes
// (of the cluster, or of a zone: the topology.kubernetes.io/zone label) carry it; see
// [engine.Brake]. The zero Brake never pauses.
type Brake = engine.Brake

// Backoff paces retries; see [engine.Backoff]. The zero value waits 100 ms, doubling up to
// 2 minutes, with a jitter of 0.2.
type Backoff = engine.Backoff

// Options configures a [Manager]. The zero value gives the real clock, 8 event workers,
// delete workers that follow the Deleter's latency (from 8 up to 128; see DeleteWorkers),
// deletes bounded by [DefaultDeleteTimeout] and retried forever with the default [Backoff],
// deadlines from TimeAdded, Lt and Gt off, no observer, real deletes, and no rate limit or
// brake. Each field is the engine's field of the same meaning
// ([engine.Options]), for pods on nodes.
type Options struct {
	// Clock tells the time and runs the timers. nil means the real clock.
	Clock clock.Clock
	// Workers is how many goroutines process node and pod updates. Nodes are hashed onto
	// them by name, so that one node's updates are processed in order and before updates of
	// its pods. 0 means 8; negative is an error.
	Workers int
	// DeleteWorkers is how many Deleter calls may run at once. 0 means that it follows the
	// Deleter: it starts at 8 and moves between that and MaxDeleteWorkers from each call's
	// latency against the least latency seen lately, so that whatever limits the deletes (the
	// client's rate limiter, at any QPS, or the API server) always has a few waiting and never
	// many (see [engine.Options].ActWorkers). A positive value pins it; negative is an error.
	DeleteWorkers int
	// MaxDeleteWorkers caps DeleteWorkers when it follows the Deleter. 0 means
	// engine.DefaultMaxActWorkers (128); negative is an error.
	MaxDeleteWorkers int
	// DeleteTimeout bounds each Deleter call: its context is cancelled after that long and
	// the call counts as failed. 0 means DefaultDeleteTimeout; negative means no bound.
	DeleteTimeout time.Duration
	// Backoff paces retries: the attempts of a failed eviction, and the retries of an
	// update whose Cache lookup failed. An eviction is never dropped: it is retried until
	// it succeeds or is cancelled.
	Backoff Backoff
	// Unreachable, when not nil, says whether a Deleter's error means that the API server
	// could not be reached (a refused or broken connection) rather than a failure of this
	// pod; such evictions are also retried at once (their backoff kept) by
	// [Manager.RetryUnreachable]. See [engine.Options].Unreachable.
	Unreachable func(err error) bool
	// Observer, when not nil, is told every decision; see [Observer].
	Observer Observer
	// ComparisonOperators enables the Lt and Gt toleration operators.
	ComparisonOperators bool
	// DeadlineSource chooses where countdowns start; the zero value is FromTimeAdded.
	DeadlineSource DeadlineSource
	// DryRun makes the Manager call no Deleter: every decision is still made and reported,
	// and an eviction that is due is reported as Succeeded with dryRun true.
	DryRun bool

	// RateLimit bounds the evictions of the Manager: at most RateLimit.PerSecond a second,
	// in bursts of at most RateLimit.Burst. An eviction that is due and finds no token
	// waits for the next one, in the schedule (see [Manager.Pending]), and evictions due
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
	// Brake pauses the evictions caused by a taint key while too many nodes carry it; see
	// [Brake]. The zero Brake never pauses.
	Brake Brake
}

// engine returns o as the engine's options, for pods on nodes.
func (o Options) engine() engine.Options {
	eo := engine.Options{
		Clock:           o.Clock,
		Workers:         o.Workers,
		ActWorkers:      o.DeleteWorkers,
		MaxActWorkers:   o.MaxDeleteWorkers,
		ActTimeout:      o.DeleteTimeout,
		Backoff:         o.Backoff,
		Unreachable:     o.Unreachable,
		Tolerations:     tolerations.Options{ComparisonOperators: o.ComparisonOperators},
		DeadlineSource:  o.DeadlineSource,
		DryRun:          o.DryRun,
		RateLimit:       o.RateLimit,
		TaintRateLimits: o.TaintRateLimits,
		Brake:           o.Brake,
	}
	if o.Observer != nil {
		eo.Observer = PodObserver(o.Observer)
	}
	return eo
}
