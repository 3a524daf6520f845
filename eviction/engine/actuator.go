package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Actuator acts on a target whose time is up: deletes it, evicts it, migrates it, or moves
// it elsewhere. The [Engine] calls it from its act workers, at most once at a time for a
// target, with a context cancelled after [Options.ActTimeout] and when the Engine stops;
// Act must return when it is. No lock is held while Act runs: it may call the update
// methods and Pending, but not WaitIdle, which would wait for it.
//
// Nil (the target is removed, on its way out, or moved off the holder) or an error for
// which [IsGone] is true ends the eviction. The Engine then does not act on that UID again
// while the Source still shows it bound to that holder; so a move that keeps the UID must
// reach the Engine as an update ([Engine.TargetUpdated]). Any other error is retried with
// backoff.
type Actuator interface {
	Act(ctx context.Context, target Ref) error
}

// ActuatorFunc adapts a function to an [Actuator].
type ActuatorFunc func(ctx context.Context, target Ref) error

var _ Actuator = ActuatorFunc(nil)

// Act calls f(ctx, target).
func (f ActuatorFunc) Act(ctx context.Context, target Ref) error { return f(ctx, target) }

// ErrGone is what an [Actuator] returns, possibly wrapped, when the target no longer exists
// (a failed UID precondition says the same): the eviction counts as done.
var ErrGone = errors.New("engine: target is already gone")

// IsGone reports whether err says that the target is already gone: err wraps [ErrGone], or
// is a Kubernetes NotFound API error.
func IsGone(err error) bool {
	return errors.Is(err, ErrGone) || apierrors.IsNotFound(err)
}

// ErrOverload is what an [Actuator] returns, possibly wrapped, when the server it calls
// refused the call for load; Kubernetes API errors need no wrapping ([IsOverload]).
var ErrOverload = errors.New("engine: the server is overloaded")

// IsOverload reports whether err says that the server an [Actuator] calls is overloaded, so
// that fewer calls run at once ([Options.ActWorkers]): err wraps [ErrOverload] or
// [ErrActTimeout], or is a Kubernetes API error with code 429 (but not [IsPDBRefusal]),
// 503, 504, or the reason ServerTimeout or Timeout. A refusal, a conflict, a forbidden verb
// or a plain 500 is not overload.
func IsOverload(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrOverload) || errors.Is(err, ErrActTimeout) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err) {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	switch status.Status().Code {
	case http.StatusTooManyRequests:
		return !IsPDBRefusal(err)
	case http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// IsPDBRefusal reports whether err is the Eviction API's refusal for a PodDisruptionBudget:
// a Kubernetes API error with the cause DisruptionBudget (policyv1.DisruptionBudgetCause),
// which the API server gives with a 429 or a 403. A 429 of API Priority and Fairness has no
// such cause.
func IsPDBRefusal(err error) bool {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	return slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool {
		return c.Type == policyv1.DisruptionBudgetCause
	})
}

// ErrActTimeout is the cause of an Actuator context cancelled by [Options.ActTimeout], and
// what the error reported for such a call wraps.
var ErrActTimeout = errors.New("engine: actuator call timed out")

// PanicError is the error [Observer.Failed] reports when the [Actuator] panicked: the
// Engine recovers it and retries as after any failure. It is also what [Engine.Run] returns
// when a [Source] or [Observer] method panicked in a worker: the Engine stops rather than
// go on from a decision made in part.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
	// In says what panicked: "" for the Actuator, "a worker" for the Source or the
	// Observer called from an Engine's worker.
	In string
}

// Error returns "engine: actuator panicked: VALUE", or "engine: IN panicked: VALUE".
func (e *PanicError) Error() string {
	in := e.In
	if in == "" {
		in = "actuator"
	}
	return fmt.Sprintf("engine: %s panicked: %v", in, e.Value)
}
