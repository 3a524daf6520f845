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

// TestIsOverload: the errors that bring the act workers' limit down are those that say the
// server is overloaded, wrapped or not; a target's own refusal, a conflict, a missing
// target or a plain server error of one call are not.
func TestIsOverload(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	pdbRefusal := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	pdbRefusal.ErrStatus.Details.Causes = append(pdbRefusal.ErrStatus.Details.Causes,
		metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget web needs 2 healthy pods"})
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"ErrOverload, wrapped", fmt.Errorf("clientgo: delete shop/web: %w", engine.ErrOverload), true},
		{"ErrActTimeout, wrapped", fmt.Errorf("engine: %w", engine.ErrActTimeout), true},
		{"429 from API Priority and Fairness", apierrors.NewTooManyRequests("too many requests", 1), true},
		{"429 with no details", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 429}}, true},
		{"429 for a PodDisruptionBudget", pdbRefusal, false},
		{"503", apierrors.NewServiceUnavailable("etcd is not ready"), true},
		{"504", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 504}}, true},
		{"ServerTimeout", apierrors.NewServerTimeout(pods, "delete", 1), true},
		{"Timeout", apierrors.NewTimeoutError("request did not complete", 1), true},
		{"500: two PodDisruptionBudgets cover the pod", apierrors.NewInternalError(errors.New("this pod has more than one PodDisruptionBudget")), false},
		{"404", apierrors.NewNotFound(pods, "web"), false},
		{"409", apierrors.NewConflict(pods, "web", errors.New("the UID precondition failed")), false},
		{"403", apierrors.NewForbidden(pods, "web", errors.New("RBAC")), false},
		{"the caller's context", context.Canceled, false},
		{"any other error", errors.New("boom"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := engine.IsOverload(tc.err); got != tc.want {
				t.Errorf("IsOverload(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
