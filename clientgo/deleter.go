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

// The reason and message of the DisruptionTarget condition kube's taint eviction
// controller sets before it deletes a pod.
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
	// Pods, if not nil, is read for the pod's generation (the condition's
	// observedGeneration) and the transition time of a condition set already, kept so
	// that a repeated patch changes nothing.
	Pods     PodGetter
	Observer DeleteObserver     // if not nil, told how each pod went
	Clock    clock.PassiveClock // stamps the condition's lastTransitionTime; nil: the real one
	// Reason and Message are the condition's; "" means DisruptionReason and -Message.
	Reason, Message string
}

// PodDeleter is the [eviction.Deleter] that does what kube-controller-manager does, in two
// API calls where kube makes three (a GET first, then a DELETE without precondition, which
// may delete a pod re-created under the same name meanwhile: kubernetes#119862):
//
//  1. a strategic merge patch of the pod's status that sets DisruptionTarget=True as kube
//     v1.37 does (with [PodDeleterOptions]' reason and message) and carries the pod's UID
//     in metadata.uid, so that the API server rejects it for another pod of that name;
//  2. a DELETE with a UID precondition, unless the patch's answer shows the pod being
//     deleted already (by an earlier attempt whose answer was lost, say).
//
// A pod that is gone (NotFound), replaced (a failed UID precondition) or being deleted
// already is reported with an error wrapping [eviction.ErrPodGone]. Any other error is
// returned, for the Manager to retry; a Forbidden error names the verb RBAC refused
// ("forbidden: pods delete").
//
// Delete blocks on the API server, is bounded by its ctx, and is safe for concurrent use.
// The zero PodDeleter is not usable: create one with [NewPodDeleter].
type PodDeleter struct {
	client kubernetes.Interface
	opts   PodDeleterOptions
}

// NewPodDeleter returns the PodDeleter that marks and deletes pods through client.
func NewPodDeleter(client kubernetes.Interface, opts PodDeleterOptions) *PodDeleter {
	opts.Reason, opts.Message = cmp.Or(opts.Reason, DisruptionReason), cmp.Or(opts.Message, DisruptionMessage)
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &PodDeleter{client: client, opts: opts}
}

// Delete marks the pod and deletes it.
func (d *PodDeleter) Delete(ctx context.Context, ref eviction.PodRef) error {
	err := d.markAndDelete(ctx, ref)
	ended(d.opts.Observer, ref, MethodDelete, err)
	return err
}

// markAndDelete is Delete, telling the Observer only Found; also EvictionDeleter's fallback.
func (d *PodDeleter) markAndDelete(ctx context.Context, ref eviction.PodRef) error {
	pods := d.client.CoreV1().Pods(ref.Namespace) // one client for both calls
	pod, err := d.mark(ctx, pods, ref)
	if err != nil {
		return err
	}
	if pod != nil && pod.DeletionTimestamp != nil {
		return fmt.Errorf("%w: patch pods/status %s: the pod is being deleted already (since %s)",
			eviction.ErrPodGone, ref, pod.DeletionTimestamp.UTC().Format(time.RFC3339))
	}
	found(d.opts.Observer, ref)
	uid := ref.UID
	err = pods.Delete(ctx, ref.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	return apiError(err, ref, "pods", "delete")
}

// found tells obs, if not nil, that the call found the pod.
func found(obs DeleteObserver, ref eviction.PodRef) {
	if obs != nil {
		obs.Found(ref)
	}
}

// ended reports whether err, a Deleter call's, ended the eviction, and tells obs so.
func ended(obs DeleteObserver, ref eviction.PodRef, how Method, err error) bool {
	if err != nil && !engine.IsGone(err) {
		return false
	}
	if obs != nil {
		obs.Removed(ref, how, err != nil)
	}
	return true
}

// mark sets DisruptionTarget=True and returns the pod as the server answered.
func (d *PodDeleter) mark(ctx context.Context, pods corev1.PodInterface, ref eviction.PodRef) (*v1.Pod, error) {
	cond := disruptionCondition{
		Type:               v1.DisruptionTarget,
		Status:             v1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(d.opts.Clock.Now()),
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

// from completes c from the cached pod as kube v1.37's UpdatePodCondition does: the pod's
// generation, and the transition time of a condition whose status does not change.
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

// uidRefused reports whether err is a 422 Invalid for a patch of another metadata.uid.
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

// apiError wraps the API server's answer to a call for ref: NotFound, and a failed UID
// precondition, wrap eviction.ErrPodGone; Forbidden names what RBAC refused.
func apiError(err error, ref eviction.PodRef, resource, verb string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %s %s %s: %w", eviction.ErrPodGone, verb, resource, ref, err)
	case apierrors.IsConflict(err), uidRefused(err):
		// The only precondition sent is the UID (a real API server refuses a patch of it
		// with 422): the pod of that name is another pod now, and ours is gone.
		return fmt.Errorf("%w: %s %s %s: UID precondition failed: %w", eviction.ErrPodGone, verb, resource, ref, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("clientgo: forbidden: %s %s (%s): %w", resource, verb, ref, err)
	}
	return fmt.Errorf("clientgo: %s %s %s: %w", verb, resource, ref, err)
}
