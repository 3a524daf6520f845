package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/eviction"
)

var podsResource = schema.GroupResource{Resource: "pods"}

func testPod(uid types.UID, conditions ...v1.PodCondition) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: uid},
		Spec:       v1.PodSpec{NodeName: "node-1"},
		Status:     v1.PodStatus{Phase: v1.PodRunning, Conditions: conditions},
	}
}

var testRef = eviction.PodRef{Namespace: "shop", Name: "web-1", UID: "uid-old", Node: "node-1"}

// verbs returns "verb resource/subresource" for each action that is not a read.
func verbs(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		if a.GetVerb() == "get" {
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			s += "/" + sub
		}
		out = append(out, s)
	}
	return out
}

func TestPodDeleterMarksThenDeletes(t *testing.T) {
	ready := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
	client := fake.NewClientset(testPod("uid-old", ready))

	require.NoError(t, PodDeleter{Client: client}.Delete(t.Context(), testRef))

	_, err := client.CoreV1().Pods("shop").Get(t.Context(), "web-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "pod deleted: %v", err)
	actions := client.Actions()
	assert.Equal(t, []string{"update pods/status", "delete pods"}, verbs(actions))
	marked, deleted, del := podActions(t, actions, "shop", "web-1")
	require.GreaterOrEqual(t, marked, 0, "DisruptionTarget set")
	require.Less(t, marked, deleted, "and before the delete")
	updated := actions[marked].(k8stesting.UpdateAction).GetObject().(*v1.Pod)
	assert.Contains(t, updated.Status.Conditions, ready, "other conditions kept")
	assert.Equal(t, types.UID("uid-old"), updated.UID, "the update carries the UID")
	require.NotNil(t, del.GetDeleteOptions().Preconditions)
	assert.Equal(t, types.UID("uid-old"), *del.GetDeleteOptions().Preconditions.UID)
}

// A pod marked already (by an earlier attempt whose delete failed) is not updated again.
func TestPodDeleterMarkedAlready(t *testing.T) {
	marked := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: DisruptionReason, Message: DisruptionMessage}
	client := fake.NewClientset(testPod("uid-old", marked))
	require.NoError(t, PodDeleter{Client: client}.Delete(t.Context(), testRef))
	assert.Equal(t, []string{"delete pods"}, verbs(client.Actions()))
}

// A status update rejected with a Conflict (the kubelet changed the pod meanwhile) is
// retried on a fresh read.
func TestPodDeleterRetriesStatusConflict(t *testing.T) {
	client := fake.NewClientset(testPod("uid-old"))
	conflicts := 1
	client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(podsResource, "web-1", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	require.NoError(t, PodDeleter{Client: client}.Delete(t.Context(), testRef))
	assert.Equal(t, []string{"update pods/status", "update pods/status", "delete pods"}, verbs(client.Actions()))
}

// TestPodDeleterGone checks which failures mean that the pod is gone (the eviction is done)
// and which are to be retried.
func TestPodDeleterGone(t *testing.T) {
	uidConflict := apierrors.NewConflict(podsResource, "web-1",
		fmt.Errorf("Precondition failed: UID in precondition: uid-old, UID in object meta: uid-new"))
	tests := []struct {
		name    string
		pod     *v1.Pod // in the fake API server; nil for none
		verb    string  // the reactor fails this verb ("update" is the status update)...
		err     error   // ...with this error, every time
		gone    bool
		actions []string // the writes sent
	}{
		{name: "no such pod", gone: true},
		{name: "re-created under the same name", pod: testPod("uid-new"), gone: true},
		{name: "deleted before the status update", pod: testPod("uid-old"), verb: "update",
			err: apierrors.NewNotFound(podsResource, "web-1"), gone: true, actions: []string{"update pods/status"}},
		{name: "deleted before the delete", pod: testPod("uid-old"), verb: "delete",
			err: apierrors.NewNotFound(podsResource, "web-1"), gone: true, actions: []string{"update pods/status", "delete pods"}},
		{name: "UID precondition failed", pod: testPod("uid-old"), verb: "delete",
			err: uidConflict, gone: true, actions: []string{"update pods/status", "delete pods"}},
		{name: "delete failed", pod: testPod("uid-old"), verb: "delete",
			err: apierrors.NewInternalError(errors.New("etcd is down")), actions: []string{"update pods/status", "delete pods"}},
		{name: "status update failed", pod: testPod("uid-old"), verb: "update",
			err: apierrors.NewTooManyRequests("slow down", 1), actions: []string{"update pods/status"}},
		{name: "status update conflicts on and on", pod: testPod("uid-old"), verb: "update",
			err:     apierrors.NewConflict(podsResource, "web-1", errors.New("the object has been modified")),
			actions: []string{"update pods/status", "update pods/status", "update pods/status", "update pods/status", "update pods/status"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.pod != nil {
				objs = append(objs, tc.pod)
			}
			client := fake.NewClientset(objs...)
			if tc.verb != "" {
				client.PrependReactor(tc.verb, "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.err
				})
			}

			err := PodDeleter{Client: client}.Delete(t.Context(), testRef)

			require.Error(t, err)
			assert.Equal(t, tc.gone, errors.Is(err, eviction.ErrPodGone), "errors.Is(%v, ErrPodGone)", err)
			assert.Equal(t, tc.gone, eviction.IsGone(err), "eviction.IsGone(%v)", err)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err, "the API error stays in the chain")
			}
			assert.Equal(t, tc.actions, verbs(client.Actions()))
		})
	}
}

func TestSetDisruptionTarget(t *testing.T) {
	var st v1.PodStatus
	require.True(t, setDisruptionTarget(&st))
	require.Len(t, st.Conditions, 1)
	first := st.Conditions[0].LastTransitionTime
	assert.False(t, setDisruptionTarget(&st), "unchanged the second time")

	// Another reason for the same condition (a preemption, say) is replaced; the
	// transition time stays, since the status does.
	st.Conditions[0].Reason = "PreemptionByScheduler"
	assert.True(t, setDisruptionTarget(&st))
	assert.Equal(t, DisruptionReason, st.Conditions[0].Reason)
	assert.Equal(t, first, st.Conditions[0].LastTransitionTime)

	st.Conditions[0].Status = v1.ConditionFalse
	assert.True(t, setDisruptionTarget(&st))
	assert.Equal(t, v1.ConditionTrue, st.Conditions[0].Status)
	assert.Len(t, st.Conditions, 1)
}
