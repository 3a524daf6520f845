package clientgo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// The pod condition kube-controller-manager's taint eviction controller sets before it
// deletes a pod, so that the pod's owners (a Job's pod failure policy, for one) can tell why
// the pod went.
const (
	DisruptionReason  = "DeletionByTaintManager"
	DisruptionMessage = "Taint manager: deleting due to NoExecute taint"
)

// PodGetter reads a pod from a cache, as [InformerCache] and every [eviction.Cache] do.
type PodGetter interface {
	Pod(namespace, name string) (*v1.Pod, error)
}

// PodDeleterOptions configures a [PodDeleter]. The zero value is ready to use.
type PodDeleterOptions struct {
	// Pods, if not nil, is read (never the API server) for the pod's generation, the
	// condition's observedGeneration as kube sets it, and for the transition time of a
	// condition set already, kept so that the patch of a pod marked already changes
	// nothing. nil sends the condition without observedGeneration.
	Pods PodGetter
	// Observer, if not nil, is told how each pod went.
	Observer DeleteObserver
	// Clock stamps the condition's lastTransitionTime. nil means the real clock.
	Clock clock.PassiveClock
	// Reason and Message are the DisruptionTarget condition's; "" means [DisruptionReason]
	// and [DisruptionMessage] (package clientgo/device sets the device controller's).
	Reason, Message string
}

// PodDeleter is the [eviction.Deleter] that does what kube-controller-manager does, in two
// API calls where kube makes three:
//
//  1. a strategic merge patch of the pod's status subresource that sets the condition
//     DisruptionTarget=True (reason [DisruptionReason], message [DisruptionMessage], or
//     those of [PodDeleterOptions]; observedGeneration the pod's generation, as kube v1.37
//     sets it) and carries the pod's UID in metadata.uid, so that the API server rejects it
//     for any other pod of that name;
//  2. a DELETE with a UID precondition, unless the patch's answer shows the pod being
//     deleted already.
//
// Kube reads the pod first (a GET) and deletes without a precondition, so that a pod
// re-created under the same name meanwhile can be deleted in its place (a race of the kind
// of kubernetes#119862).
//
// The patch is sent even when the cached pod is marked already (a retry, or a takeover
// after a crash): the server then writes nothing, and answers with the pod as it is now,
// where the cache may lag. A DELETE of an earlier attempt whose answer was lost shows
// there as a deletionTimestamp, and the pod is not deleted a second time.
//
// A pod that is gone (NotFound), replaced (a UID precondition failed: a Conflict) or
// being deleted already is reported with an error wrapping [eviction.ErrPodGone]: the
// eviction is done. Any other error, Forbidden included, is returned and retried by the
// Manager; a Forbidden error's message names the verb RBAC refused ("forbidden: pods
// delete").
//
// Delete blocks on the API server, is bounded by its ctx, and is safe for concurrent use.
// The zero PodDeleter is not usable: create one with [NewPodDeleter].
type PodDeleter struct {
	client kubernetes.Interface
	opts   PodDeleterOptions
	clock  clock.PassiveClock
}

var _ eviction.Deleter = (*PodDeleter)(nil)

// NewPodDeleter returns the PodDeleter that marks and deletes pods through client.
func NewPodDeleter(client kubernetes.Interface, opts PodDeleterOptions) *PodDeleter {
	opts.Reason, opts.Message = cmp.Or(opts.Reason, DisruptionReason), cmp.Or(opts.Message, DisruptionMessage)
	d := &PodDeleter{client: client, opts: opts, clock: opts.Clock}
	if d.clock == nil {
		d.clock = clock.RealClock{}
	}
	return d
}

// Delete marks the pod and deletes it.
func (d *PodDeleter) Delete(ctx context.Context, ref eviction.PodRef) error {
	err := d.markAndDelete(ctx, ref, d.opts.Observer)
	if d.opts.Observer != nil && (err == nil || engine.IsGone(err)) {
		d.opts.Observer.Removed(ref, MethodDelete, err != nil)
	}
	return err
}

// markAndDelete is Delete, telling obs (if not nil) only that the pod was found; also
// [EvictionDeleter]'s fallback.
func (d *PodDeleter) markAndDelete(ctx context.Context, ref eviction.PodRef, obs DeleteObserver) error {
	pods := d.client.CoreV1().Pods(ref.Namespace) // one client for both calls
	pod, err := d.mark(ctx, pods, ref)
	if err != nil {
		return err
	}
	if pod != nil && pod.DeletionTimestamp != nil {
		return fmt.Errorf("%w: patch pods/status %s: the pod is being deleted already (since %s)",
			eviction.ErrPodGone, ref, pod.DeletionTimestamp.UTC().Format(time.RFC3339))
	}
	if obs != nil {
		obs.Found(ref)
	}
	uid := ref.UID
	err = pods.Delete(ctx, ref.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	return apiError(err, ref, "pods", "delete")
}

// mark sets DisruptionTarget=True and returns the pod as the server answered.
func (d *PodDeleter) mark(ctx context.Context, pods corev1.PodInterface, ref eviction.PodRef) (*v1.Pod, error) {
	cond := disruptionCondition{
		Type:               v1.DisruptionTarget,
		Status:             v1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(d.clock.Now()),
		Reason:             d.opts.Reason,
		Message:            d.opts.Message,
	}
	if d.opts.Pods != nil {
		if pod, err := d.opts.Pods.Pod(ref.Namespace, ref.Name); err == nil && pod != nil && pod.UID == ref.UID {
			cond.from(pod)
		}
	}
	pod, err := pods.Patch(ctx, ref.Name, types.StrategicMergePatchType, cond.statusPatch(ref.UID), metav1.PatchOptions{}, "status")
	return pod, apiError(err, ref, "pods/status", "patch")
}

// from completes c from the cached pod as kube v1.37 does (pkg/api/v1/pod's
// UpdatePodCondition and CalculatePodConditionObservedGeneration, with the
// PodObservedGenerationTracking gate locked on): observedGeneration is the pod's generation,
// and the transition time of a condition whose status does not change is kept.
func (c *disruptionCondition) from(pod *v1.Pod) {
	c.ObservedGeneration = pod.Generation
	for _, old := range pod.Status.Conditions {
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		return
	}
}

// uidRefused reports whether err is the API server's 422 Invalid for a patch whose
// metadata.uid is not the object's.
func uidRefused(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

// apiError maps the API server's answer to a call on resource (verb) for ref: NotFound, and
// a failed UID precondition, wrap eviction.ErrPodGone; Forbidden names what RBAC refused;
// the rest is wrapped with the call.
func apiError(err error, ref eviction.PodRef, resource, verb string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %s %s %s: %w", eviction.ErrPodGone, verb, resource, ref, err)
	case apierrors.IsConflict(err), uidRefused(err):
		// The only precondition sent is the UID: a Conflict (a delete's precondition) or an
		// Invalid metadata.uid (a patch's: a real API server refuses to change an
		// immutable UID with 422) says that the pod of that name is another pod now, and
		// ours is gone.
		return fmt.Errorf("%w: %s %s %s: UID precondition failed: %w", eviction.ErrPodGone, verb, resource, ref, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("clientgo: forbidden: %s %s (%s): %w", resource, verb, ref, err)
	}
	return fmt.Errorf("clientgo: %s %s %s: %w", verb, resource, ref, err)
}
