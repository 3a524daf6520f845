package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/taintevict/taintevict/eviction/engine"
)

// TestIsOverload: the errors that say the server is overloaded (and make the act workers
// back off) against those that are the target's, or of one call: a plain 500 is not
// overload (the Eviction API answers 500 for a pod that two PodDisruptionBudgets cover, and
// backing every call off for it kept the limit at its floor).
func TestIsOverload(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	pdb := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	pdb.ErrStatus.Details.Causes = append(pdb.ErrStatus.Details.Causes,
		metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: "needs 1 healthy pod"})
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"ErrOverload, wrapped", fmt.Errorf("cloud API: %w", engine.ErrOverload), true},
		{"ErrActTimeout, wrapped", fmt.Errorf("%w after 30s: %w", engine.ErrActTimeout, errors.New("context canceled")), true},
		{"429 from priority and fairness", apierrors.NewTooManyRequests("Too many requests, please try again later.", 1), true},
		{"429 from priority and fairness, wrapped", fmt.Errorf("clientgo: delete: %w", apierrors.NewTooManyRequests("", 1)), true},
		{"429 for a PodDisruptionBudget", pdb, false},
		{"500: two PodDisruptionBudgets cover the pod", apierrors.NewInternalError(errors.New("this pod has more than one PodDisruptionBudget")), false},
		{"500, another", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), false},
		{"503", apierrors.NewServiceUnavailable("unavailable"), true},
		{"504, the Timeout reason", apierrors.NewTimeoutError("timed out", 1), true},
		{"504, no reason", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 504}}, true},
		{"429 with no details", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 429}}, true},
		{"ServerTimeout", apierrors.NewServerTimeout(pods, "delete", 1), true},
		{"404", apierrors.NewNotFound(pods, "web-1"), false},
		{"409", apierrors.NewConflict(pods, "web-1", errors.New("uid precondition")), false},
		{"403", apierrors.NewForbidden(pods, "web-1", errors.New("rbac")), false},
		{"a plain error", errors.New("connection refused"), false},
		{"the caller's context", context.Canceled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := engine.IsOverload(tc.err); got != tc.want {
				t.Errorf("IsOverload(%v): got %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestIsPDBRefusal: the Eviction API's refusals for a PodDisruptionBudget, as the API
// server makes them (a 429 or a 403 with the DisruptionBudget cause), against the 429 of
// its flow control, which client-go makes from a plain-text answer with Retry-After.
func TestIsPDBRefusal(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	withCause := func(err *apierrors.StatusError) error {
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: "web"})
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"429: disruptions allowed 0", withCause(apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)), true},
		{"429: the budget not processed yet, wrapped", fmt.Errorf("clientgo: %w", withCause(apierrors.NewTooManyRequests("", 10))), true},
		{"403: disruptions allowed negative", withCause(apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}, "web", errors.New("pdb disruptions allowed is negative"))), true},
		{"429 from priority and fairness", apierrors.NewGenericServerResponse(429, "POST", pods, "web-1", "Too many requests, please try again later.", 1, true), false},
		{"429 with no details", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 429}}, false},
		{"403 from RBAC", apierrors.NewForbidden(pods, "web-1", errors.New("rbac")), false},
		{"500: two PodDisruptionBudgets cover the pod", apierrors.NewInternalError(errors.New("this pod has more than one PodDisruptionBudget")), false},
		{"a plain error", errors.New("connection refused"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := engine.IsPDBRefusal(tc.err); got != tc.want {
				t.Errorf("IsPDBRefusal(%v): got %v, want %v", tc.err, got, tc.want)
			}
			if tc.want && engine.IsOverload(tc.err) {
				t.Errorf("IsOverload(%v): got true, want false for a budget's refusal", tc.err)
			}
		})
	}
}
