package clientgo

import (
	"context"
	"fmt"
	"sync"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// EvictionDeleterOptions configures an [EvictionDeleter]. The zero value is ready to use.
type EvictionDeleterOptions struct {
	// PDBTimeout, when positive, is how long PodDisruptionBudgets may refuse a pod's
	// eviction, from the first refusal by one: a call made after that deletes the pod as
	// [PodDeleter] does. 0 waits for the budgets forever; negative is an error.
	PDBTimeout time.Duration
	Pods       PodGetter          // for the fallback [PodDeleter]; see [PodDeleterOptions.Pods]
	Observer   DeleteObserver     // if not nil, told how each pod went
	Clock      clock.PassiveClock // measures PDBTimeout, stamps the fallback's; nil: the real one
	// Reason and Message are the fallback's; see [PodDeleterOptions.Reason].
	Reason, Message string
}

// podOptions are the options of the [PodDeleter] that deletes as opts say.
func (opts EvictionDeleterOptions) podOptions() PodDeleterOptions {
	return PodDeleterOptions{Pods: opts.Pods, Observer: opts.Observer, Clock: opts.Clock, Reason: opts.Reason, Message: opts.Message}
}

// EvictionDeleter is the [eviction.Deleter] that evicts through the policy/v1 Eviction API,
// with the pod's UID as a precondition, so that PodDisruptionBudgets are honoured. One API
// call: the API server sets the DisruptionTarget condition itself.
//
// A refusal by a budget ([engine.IsPDBRefusal]) is returned as an error, for the Manager
// to retry; with [EvictionDeleterOptions.PDBTimeout], the first call made that long after
// the pod's first refusal deletes the pod instead, as [PodDeleter] does. A 429 of the API
// server's flow control ([engine.IsOverload]) neither starts nor ends the PDBTimeout.
// NotFound and a failed UID precondition wrap [eviction.ErrPodGone]; Forbidden names what
// RBAC refused ("forbidden: pods/eviction create").
//
// Delete blocks on the API server, is bounded by its ctx, and is safe for concurrent use.
// It remembers each pod's first refusal until the pod is removed or found gone, or the
// record is older than PDBTimeout plus an hour. The zero EvictionDeleter is not usable:
// create one with [NewEvictionDeleter].
type EvictionDeleter struct {
	client   kubernetes.Interface
	opts     EvictionDeleterOptions
	fallback *PodDeleter

	mu      sync.Mutex
	refused map[types.UID]refusal
	swept   int // the size of refused after the last sweep
}

type refusal struct{ first, last time.Time }

// staleRefusal is how long past PDBTimeout a refusal is remembered without a new attempt.
const staleRefusal = time.Hour

// NewEvictionDeleter returns the EvictionDeleter that evicts through client. It fails for a
// negative PDBTimeout.
func NewEvictionDeleter(client kubernetes.Interface, opts EvictionDeleterOptions) (*EvictionDeleter, error) {
	if opts.PDBTimeout < 0 {
		return nil, fmt.Errorf("clientgo: EvictionDeleterOptions.PDBTimeout is negative: %s", opts.PDBTimeout)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &EvictionDeleter{client: client, opts: opts, fallback: NewPodDeleter(client, opts.podOptions()),
		refused: map[types.UID]refusal{}}, nil
}

// Delete evicts the pod, or deletes it once its budgets have refused it for PDBTimeout.
func (d *EvictionDeleter) Delete(ctx context.Context, ref eviction.PodRef) error {
	how := MethodEvict
	var err error
	if d.timedOut(ref.UID) {
		how = MethodDeleteAfterPDBTimeout
		err = d.fallback.markAndDelete(ctx, ref)
	} else {
		err = d.evict(ctx, ref)
	}
	if ended(d.opts.Observer, ref, how, err) {
		d.forget(ref.UID)
	}
	return err
}

func (d *EvictionDeleter) evict(ctx context.Context, ref eviction.PodRef) error {
	uid := ref.UID
	err := d.client.PolicyV1().Evictions(ref.Namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	})
	refused := engine.IsPDBRefusal(err)
	if err == nil || refused {
		found(d.opts.Observer, ref) // the Eviction went through, or a budget refused it
	}
	switch {
	case refused:
		d.refusedNow(ref.UID)
		return fmt.Errorf("clientgo: eviction of %s refused by a PodDisruptionBudget: %w", ref, err)
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("clientgo: eviction of %s refused: the API server is busy: %w", ref, err)
	}
	return apiError(err, ref, "pods/eviction", "create")
}

// timedOut reports whether the pod's budgets have refused it for PDBTimeout.
func (d *EvictionDeleter) timedOut(uid types.UID) bool {
	if d.opts.PDBTimeout <= 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.refused[uid]
	return ok && d.opts.Clock.Since(r.first) >= d.opts.PDBTimeout
}

func (d *EvictionDeleter) refusedNow(uid types.UID) {
	if d.opts.PDBTimeout <= 0 {
		return // nothing to time
	}
	now := d.opts.Clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.refused[uid]
	if !ok {
		r.first = now
	}
	r.last = now
	d.refused[uid] = r
	if len(d.refused) > 2*d.swept+64 {
		d.sweep(now)
	}
}

// sweep forgets the refusals of pods not tried for long (their evictions were cancelled).
// Called under mu.
func (d *EvictionDeleter) sweep(now time.Time) {
	for uid, r := range d.refused {
		if now.Sub(r.last) > d.opts.PDBTimeout+staleRefusal {
			delete(d.refused, uid)
		}
	}
	d.swept = len(d.refused)
}

func (d *EvictionDeleter) forget(uid types.UID) {
	d.mu.Lock()
	delete(d.refused, uid)
	d.mu.Unlock()
}
