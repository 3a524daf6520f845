package eviction

import (
	"context"
	"errors"
	"fmt"

	"github.com/taintevict/taintevict/eviction/engine"
)

// PodRef names the pod to evict: its namespace, name and UID, and in Holder the node it is
// evicted from (the device, for an engine of pods on devices). It is the engine's
// [engine.Ref]. A Deleter should send the UID as a precondition, so that a pod re-created
// under the same name is never deleted in its place.
type PodRef = engine.Ref

// Deleter removes a pod whose time is up. The [Manager] calls it from its delete workers,
// at most once at a time for a pod, with a context that is cancelled after
// Options.ActTimeout and when the Manager stops; Delete must return when it is.
//
// Returning nil (the pod is deleted or on its way out), or an error for which
// [engine.IsGone] is true (it wraps [ErrPodGone], or is a Kubernetes NotFound), ends the
// eviction: the Manager does not evict that pod (that UID) again, even while its Cache
// still shows it. Any other error is retried with backoff until it succeeds, the pod is
// gone or the eviction is cancelled.
//
// A Deleter may call a clientset's Delete (with a UID precondition), the Eviction API, a
// dry-run logger, or anything else. One that should match kube-controller-manager first
// sets the pod condition DisruptionTarget=True (reason DeletionByTaintManager) through the
// status subresource, as kube does, so that the pod's owners can tell why it went.
type Deleter interface {
	Delete(ctx context.Context, pod PodRef) error
}

// DeleterFunc adapts a function to a [Deleter].
type DeleterFunc func(ctx context.Context, pod PodRef) error

var _ Deleter = DeleterFunc(nil)

// Delete calls f(ctx, pod).
func (f DeleterFunc) Delete(ctx context.Context, pod PodRef) error { return f(ctx, pod) }

// ErrPodGone is [engine.ErrGone]: what a [Deleter] returns, possibly wrapped, when the pod
// no longer exists, so that the eviction counts as done. A Deleter that sends a UID
// precondition returns it, wrapping the API's error, when the precondition fails.
var ErrPodGone = engine.ErrGone

// PodActuator returns d as the [engine.Actuator] of an engine whose targets are pods: the
// Manager's own, and the one to give an engine of pods on other holders, such as devices,
// to reuse a Deleter. It wraps d's error as "eviction: delete pod NAMESPACE/NAME: ...", so
// that [engine.IsGone] and the engine's timeout ([engine.ErrActTimeout]) still see through
// it.
func PodActuator(d Deleter) engine.Actuator { return podActuator{d} }

type podActuator struct{ d Deleter }

func (a podActuator) Act(ctx context.Context, pod engine.Ref) error {
	err := a.d.Delete(ctx, pod)
	switch {
	case err == nil:
		return nil
	case errors.Is(context.Cause(ctx), engine.ErrActTimeout) && !errors.Is(err, engine.ErrActTimeout):
		return fmt.Errorf("eviction: delete pod %s: %w: %w", pod, context.Cause(ctx), err)
	}
	return fmt.Errorf("eviction: delete pod %s: %w", pod, err)
}
