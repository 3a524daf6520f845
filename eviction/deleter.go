package eviction

import (
	"context"
	"errors"
	"fmt"

	"github.com/taintevict/taintevict/eviction/engine"
)

// PodRef names the pod to evict, and in Holder the node it is evicted from; see
// [engine.Ref]. A Deleter should send the UID as a precondition, so that a pod re-created
// under the same name is never deleted in its place.
type PodRef = engine.Ref

// Deleter removes a pod whose time is up. The [Manager] calls it at most once at a time for
// a pod, with a context that is cancelled after Options.ActTimeout and when the Manager
// stops; Delete must return when it is.
//
// Returning nil, or an error for which [engine.IsGone] is true (it wraps [ErrPodGone], or
// is a Kubernetes NotFound), ends the eviction: that pod (that UID) is not evicted again.
// Any other error is retried with backoff until it succeeds, the pod is gone or the
// eviction is cancelled.
//
// One that should match kube-controller-manager first sets the pod condition
// DisruptionTarget=True (reason DeletionByTaintManager) through the status subresource.
type Deleter interface {
	Delete(ctx context.Context, pod PodRef) error
}

// DeleterFunc adapts a function to a [Deleter].
type DeleterFunc func(ctx context.Context, pod PodRef) error

var _ Deleter = DeleterFunc(nil)

// Delete calls f(ctx, pod).
func (f DeleterFunc) Delete(ctx context.Context, pod PodRef) error { return f(ctx, pod) }

// ErrPodGone is [engine.ErrGone]: what a [Deleter] returns, possibly wrapped, when the pod
// no longer exists (or its UID precondition fails), so that the eviction counts as done.
var ErrPodGone = engine.ErrGone

// PodActuator returns d as the [engine.Actuator] of an engine whose targets are pods (the
// Manager's, or one of pods on devices). It wraps d's error as "eviction: delete pod
// NAMESPACE/NAME: ...", through which [engine.IsGone] and [engine.ErrActTimeout] still see.
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
