package eviction

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
)

// PodRef names the pod to evict and the node it is evicted from.
type PodRef struct {
	Namespace string
	Name      string
	// UID is the UID of the pod that was due. A Deleter should send it as a precondition,
	// so that a pod re-created under the same name is never deleted in its place.
	UID types.UID
	// Node is the node whose taint the pod does not tolerate (any longer).
	Node string
}

// String returns "namespace/name".
func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// podRef returns the PodRef of the engine's ref of a pod bound to its node.
func podRef(r engine.Ref) PodRef {
	return PodRef{Namespace: r.Namespace, Name: r.Name, UID: r.UID, Node: r.Holder}
}

// Deleter removes a pod whose time is up. The [Manager] calls it (as its engine's
// [engine.Actuator], see [PodActuator]) from its delete workers,
// at most once at a time for a pod, with a context that is cancelled after
// Options.DeleteTimeout and when the Manager stops; Delete must return when it is.
//
// Returning nil, or an error for which [IsGone] is true, ends the eviction: nil means the
// pod is deleted or on its way out, and the Manager does not evict that pod (that UID) again,
// even while its Cache still shows it. Any other error is retried with backoff until it
// succeeds, the pod is gone or the eviction is cancelled.
//
// Callers plug in a clientset Delete (with a UID precondition), the Eviction API, a dry-run
// logger, or anything else. kube-controller-manager first sets the pod condition
// DisruptionTarget=True (reason DeletionByTaintManager) through the status subresource, so
// that the pod's owners can tell why it went; a Deleter that should match kube does the
// same before it deletes.
type Deleter interface {
	Delete(ctx context.Context, pod PodRef) error
}

// DeleterFunc adapts a function to a [Deleter].
type DeleterFunc func(ctx context.Context, pod PodRef) error

var _ Deleter = DeleterFunc(nil)

// Delete calls f(ctx, pod).
func (f DeleterFunc) Delete(ctx context.Context, pod PodRef) error { return f(ctx, pod) }

// ErrPodGone is what a [Deleter] returns, possibly wrapped, when the pod it was asked to
// delete no longer exists; the eviction then counts as done. A Deleter that sends a UID
// precondition should return it (wrapping the API's error) when the precondition fails,
// since that means the pod it was asked for is gone.
var ErrPodGone = errors.New("eviction: pod is already gone")

// IsGone reports whether err says that the pod is already gone: err wraps [ErrPodGone], or
// is a Kubernetes NotFound API error.
func IsGone(err error) bool {
	return errors.Is(err, ErrPodGone) || apierrors.IsNotFound(err)
}

// PodActuator returns d as the [engine.Actuator] of an engine whose targets are pods and
// whose holders name the node (or other holder) in [PodRef.Node]: the Manager's own, and
// the one to give an engine of pods on other holders, such as devices, to reuse a Deleter.
// A Deleter's error for a pod that is gone ([IsGone]) ends the eviction; any other error is
// wrapped as "eviction: delete pod NAMESPACE/NAME: ..." (with [engine.ErrActTimeout] when the
// call ran out of time), and retried.
func PodActuator(d Deleter) engine.Actuator { return podActuator{d} }

type podActuator struct{ d Deleter }

func (a podActuator) Act(ctx context.Context, target engine.Ref) error {
	ref := podRef(target)
	err := a.d.Delete(ctx, ref)
	switch {
	case err == nil:
		return nil
	case IsGone(err):
		return fmt.Errorf("%w: %w", engine.ErrGone, err)
	case errors.Is(context.Cause(ctx), engine.ErrActTimeout):
		return fmt.Errorf("eviction: delete pod %s: %w: %w", ref, context.Cause(ctx), err)
	}
	return fmt.Errorf("eviction: delete pod %s: %w", ref, err)
}
