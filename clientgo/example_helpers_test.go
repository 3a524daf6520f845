package clientgo_test

import (
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/clientgo/internal/fixtures"
	"github.com/taintevict/taintevict/eviction"
)

// The examples' fixtures live here, apart from the examples, so that the documentation
// shows each example's body alone.

// unreachable returns node-1, with the taint node.kubernetes.io/unreachable:NoExecute added
// at added.
func unreachable(added time.Time) *v1.Node { return fixtures.TaintedNode("node-1", added) }

// web1 returns the pod shop/web-1 on node-1, with no toleration.
func web1() *v1.Pod { return fixtures.PodOn("shop", "web-1", "node-1") }

// tolerating gives pod the toleration of unreachable's taint for seconds, and returns it.
func tolerating(pod *v1.Pod, seconds int64) *v1.Pod { return fixtures.Tolerating(pod, &seconds) }

// notify returns the Observer that sends each pod evicted on ch.
func notify(ch chan<- eviction.PodRef) eviction.Observer { return fixtures.Evicted(ch) }

// budgetRefuses makes client refuse every Eviction as the API server does when a
// PodDisruptionBudget allows no disruption: 429 TooManyRequests, with the DisruptionBudget
// cause.
func budgetRefuses(client *fake.Clientset) {
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget web needs 1 healthy pods and has 1 currently"})
		return true, nil, err
	})
}
