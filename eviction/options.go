package eviction

import (
	"fmt"
	"time"

	"k8s.io/utils/clock"
)

// DeadlineSource says where an eviction's countdown starts.
type DeadlineSource uint8

const (
	// FromTimeAdded, the default: a taint's countdown starts at the earlier of its
	// TimeAdded and the time the taint was first seen on that node: a TimeAdded in the
	// future (clock skew) counts from first sight and stays pinned there; after a restart,
	// first sight is the restart. A pod that comes to the node later counts from the same
	// start. A restarted Manager, or a new leader, thus evicts at the same deadlines as the
	// one it replaced, for every taint with a TimeAdded that is not in the future. See
	// [tolerations.Deadline]. The API server keeps TimeAdded to the second, so a deadline
	// can fall up to a second earlier than tolerationSeconds after the taint really came.
	FromTimeAdded DeadlineSource = iota
	// FromObservation is kube-controller-manager's rule: the countdown starts when the
	// Manager first schedules the pod's eviction, so every restart starts it again. See
	// [tolerations.ObservedDeadline].
	FromObservation
)

// DefaultDeleteTimeout bounds one Deleter call when Options.DeleteTimeout is zero.
const DefaultDeleteTimeout = 30 * time.Second

// Options configures a [Manager]. The zero value gives the real clock, 8 event workers, 8
// delete workers, deletes bounded by [DefaultDeleteTimeout] and retried forever with the
// default [Backoff], deadlines from TimeAdded, Lt and Gt off, no observer, and
// real deletes.
type Options struct {
	// Clock tells the time and runs the timers. nil means the real clock.
	Clock clock.Clock
	// Workers is how many goroutines process node and pod updates. Nodes are hashed onto
	// them by name, so that one node's updates are processed in order and before updates of
	// its pods. 0 means 8; negative is an error.
	Workers int
	// DeleteWorkers is how many Deleter calls may run at once. 0 means 8; negative is an
	// error.
	DeleteWorkers int
	// DeleteTimeout bounds each Deleter call: its context is cancelled after that long and
	// the call counts as failed. 0 means DefaultDeleteTimeout; negative means no bound.
	DeleteTimeout time.Duration
	// Backoff paces retries: the attempts of a failed eviction, and the retries of an
	// update whose Cache lookup failed. An eviction is never dropped: it is retried until
	// it succeeds or is cancelled.
	Backoff Backoff
	// Observer, when not nil, is told every decision; see [Observer].
	Observer Observer
	// ComparisonOperators enables the Lt and Gt toleration operators.
	ComparisonOperators bool
	// DeadlineSource chooses where countdowns start; the zero value is FromTimeAdded.
	DeadlineSource DeadlineSource
	// DryRun makes the Manager call no Deleter: every decision is still made and reported,
	// and an eviction that is due is reported as Succeeded with dryRun true.
	DryRun bool
}

func (o Options) normalize() (Options, error) {
	if o.Workers < 0 || o.DeleteWorkers < 0 {
		return o, fmt.Errorf("eviction: Workers (%d) and DeleteWorkers (%d) must not be negative", o.Workers, o.DeleteWorkers)
	}
	if err := o.Backoff.validate(); err != nil {
		return o, err
	}
	if o.DeadlineSource > FromObservation {
		return o, fmt.Errorf("eviction: unknown DeadlineSource %d", o.DeadlineSource)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Workers == 0 {
		o.Workers = 8
	}
	if o.DeleteWorkers == 0 {
		o.DeleteWorkers = 8
	}
	if o.DeleteTimeout == 0 {
		o.DeleteTimeout = DefaultDeleteTimeout
	}
	if o.Observer == nil {
		o.Observer = NopObserver{}
	}
	return o, nil
}
