package main

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/taintevict/taintevict/eviction"
)

// The pod condition kube-controller-manager's taint eviction controller sets before it
// deletes a pod, so that the pod's owners (a Job's pod failure policy, for one) can tell why
// the pod went.
const (
	DisruptionReason  = "DeletionByTaintManager"
	DisruptionMessage = "Taint manager: deleting due to NoExecute taint"
)

// PodDeleter is the [eviction.Deleter] that does what kube-controller-manager does: it
// marks the pod with the condition DisruptionTarget=True through the status subresource,
// then deletes it. Unlike kube, it deletes with a UID precondition, so that a pod re-created
// under the same name since the Manager decided is never deleted in its place.
//
// A pod that is already gone (NotFound), or whose name now belongs to another pod (another
// UID, or the delete's UID precondition failed with a Conflict), is reported with an error
// wrapping [eviction.ErrPodGone]: the eviction is done. Any other error is returned as it
// is, and the Manager retries with backoff.
type PodDeleter struct {
	Client kubernetes.Interface
}

var _ eviction.Deleter = PodDeleter{}

// Delete marks the pod and deletes it.
func (d PodDeleter) Delete(ctx context.Context, ref eviction.PodRef) error {
	pods := d.Client.CoreV1().Pods(ref.Namespace)

	// Read the pod from the API server rather than the informer cache, which may lag: the
	// condition is written over the current status. An update rejected with a Conflict (the
	// pod changed since the read: the kubelet updates status often) is retried on a fresh
	// read, which also checks the UID again.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := pods.Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.UID != ref.UID {
			return fmt.Errorf("%w: %s has UID %s, not %s", eviction.ErrPodGone, ref, pod.UID, ref.UID)
		}
		if !setDisruptionTarget(&pod.Status) {
			return nil // marked already, by an earlier attempt
		}
		// The update carries the pod's UID and resourceVersion: the API server rejects it
		// with a Conflict if either changed since the read.
		_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: marking %s: %w", eviction.ErrPodGone, ref, err)
	case err != nil:
		// An error wrapping ErrPodGone from the UID check above, or one to retry (a Conflict
		// that outlived the retries is one: the pod is there, and changing).
		return fmt.Errorf("marking %s with %s: %w", ref, v1.DisruptionTarget, err)
	}

	uid := ref.UID
	err = pods.Delete(ctx, ref.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: deleting %s: %w", eviction.ErrPodGone, ref, err)
	case apierrors.IsConflict(err):
		// The only precondition sent is the UID: a Conflict says that the pod of that name
		// is another pod now, and ours is gone.
		return fmt.Errorf("%w: deleting %s: UID precondition failed: %w", eviction.ErrPodGone, ref, err)
	}
	return fmt.Errorf("deleting %s: %w", ref, err)
}

// setDisruptionTarget sets the condition DisruptionTarget=True with the taint manager's
// reason and message in status, and reports whether it changed anything. The transition
// time moves only when the condition's status does, as the API conventions want.
func setDisruptionTarget(status *v1.PodStatus) bool {
	cond := v1.PodCondition{
		Type:               v1.DisruptionTarget,
		Status:             v1.ConditionTrue,
		Reason:             DisruptionReason,
		Message:            DisruptionMessage,
		LastTransitionTime: metav1.Now(),
	}
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type != v1.DisruptionTarget {
			continue
		}
		if c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message {
			return false
		}
		if c.Status == cond.Status {
			cond.LastTransitionTime = c.LastTransitionTime
		}
		*c = cond
		return true
	}
	status.Conditions = append(status.Conditions, cond)
	return true
}
