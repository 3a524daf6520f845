package clientgo

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
)

var (
	podsResource = schema.GroupResource{Resource: "pods"}
	podsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	testNow      = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	testRef      = eviction.PodRef{Namespace: "shop", Name: "web-1", UID: "uid-old", Node: "node-1"}
)

func testPod(uid types.UID, generation int64, conditions ...v1.PodCondition) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: uid, Generation: generation},
		Spec:       v1.PodSpec{NodeName: "node-1"},
		Status:     v1.PodStatus{Phase: v1.PodRunning, Conditions: conditions},
	}
}

// podCache is a PodGetter over fixed pods.
type podCache map[string]*v1.Pod

func (c podCache) Pod(namespace, name string) (*v1.Pod, error) {
	if p, ok := c[namespace+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(podsResource, name)
}

// removals records DeleteObserver calls.
type removals struct {
	mu  sync.Mutex
	got []string
}

func (r *removals) Removed(pod eviction.PodRef, how Method, gone bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, fmt.Sprintf("%s %s gone=%t", pod, how, gone))
}

// TestPodDeleterTwoCalls counts the requests of one eviction: a status patch and a delete,
// where kube sends a GET, a status patch and a delete. It checks the patch field by field
// against what kube v1.37 writes, and that the other conditions stay.
func TestPodDeleterTwoCalls(t *testing.T) {
	ready := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
	pod := testPod("uid-old", 3, ready)
	client := fake.NewClientset(pod)
	var merged *v1.Pod // the pod as the status patch left it, read right before the delete
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := client.Tracker().Get(podsGVR, "shop", "web-1")
		require.NoError(t, err)
		merged = obj.(*v1.Pod)
		return false, nil, nil
	})
	obs := &removals{}
	d := NewPodDeleter(client, PodDeleterOptions{Pods: podCache{"shop/web-1": pod}, Observer: obs, Clock: clocktesting.NewFakePassiveClock(testNow)})

	require.NoError(t, d.Delete(t.Context(), testRef))

	actions := client.Actions()
	require.Equal(t, []string{"patch pods/status", "delete pods"}, writes(actions))
	assert.Len(t, actions, 2, "two requests in all: no GET")
	patch := actions[0].(k8stesting.PatchAction)
	assert.Equal(t, types.StrategicMergePatchType, patch.GetPatchType())
	var body map[string]any
	require.NoError(t, json.Unmarshal(patch.GetPatch(), &body))
	assert.Equal(t, map[string]any{
		"metadata": map[string]any{"uid": "uid-old"},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "DisruptionTarget", "status": "True", "observedGeneration": float64(3),
			"lastTransitionTime": "2026-11-30T12:00:00Z",
			"reason":             "DeletionByTaintManager", "message": "Taint manager: deleting due to NoExecute taint",
		}}},
	}, body)
	require.NotNil(t, merged)
	assert.Contains(t, merged.Status.Conditions, ready, "other conditions kept")
	assert.Len(t, merged.Status.Conditions, 2)
	del := actions[1].(k8stesting.DeleteAction)
	require.NotNil(t, del.GetDeleteOptions().Preconditions)
	assert.Equal(t, types.UID("uid-old"), *del.GetDeleteOptions().Preconditions.UID)
	assert.Equal(t, []string{"shop/web-1 delete gone=false"}, obs.got)
}

// TestPodDeleterCondition checks the condition against the cached pod as kube computes it:
// a pod marked already is only deleted (one request); a DisruptionTarget of another reason
// is replaced, keeping its transition time since its status stays.
func TestPodDeleterCondition(t *testing.T) {
	earlier := metav1.NewTime(testNow.Add(-time.Hour))
	ours := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: DisruptionReason, Message: DisruptionMessage, ObservedGeneration: 2, LastTransitionTime: earlier}
	preempted := ours
	preempted.Reason = "PreemptionByScheduler"
	falseOne := ours
	falseOne.Status = v1.ConditionFalse
	tests := []struct {
		name   string
		cached *v1.Pod
		writes []string
		ltt    string // the patched lastTransitionTime
		gen    any    // the patched observedGeneration; nil for none
	}{
		{"marked already", testPod("uid-old", 2, ours), []string{"delete pods"}, "", nil},
		{"marked at an older generation", testPod("uid-old", 5, ours), []string{"patch pods/status", "delete pods"}, "2026-11-30T11:00:00Z", float64(5)},
		{"marked for another reason", testPod("uid-old", 2, preempted), []string{"patch pods/status", "delete pods"}, "2026-11-30T11:00:00Z", float64(2)},
		{"condition false", testPod("uid-old", 2, falseOne), []string{"patch pods/status", "delete pods"}, "2026-11-30T12:00:00Z", float64(2)},
		{"cache has another pod", testPod("uid-new", 2, ours), []string{"patch pods/status", "delete pods"}, "2026-11-30T12:00:00Z", nil},
		{"no cache", nil, []string{"patch pods/status", "delete pods"}, "2026-11-30T12:00:00Z", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(testPod("uid-old", 2))
			opts := PodDeleterOptions{Clock: clocktesting.NewFakePassiveClock(testNow)}
			if tc.cached != nil {
				opts.Pods = podCache{"shop/web-1": tc.cached}
			}
			require.NoError(t, NewPodDeleter(client, opts).Delete(t.Context(), testRef))
			actions := client.Actions()
			require.Equal(t, tc.writes, writes(actions))
			if len(actions) < 2 {
				return
			}
			var body struct {
				Status struct{ Conditions []map[string]any }
			}
			require.NoError(t, json.Unmarshal(actions[0].(k8stesting.PatchAction).GetPatch(), &body))
			require.Len(t, body.Status.Conditions, 1)
			c := body.Status.Conditions[0]
			assert.Equal(t, tc.ltt, c["lastTransitionTime"])
			assert.Equal(t, tc.gen, c["observedGeneration"])
			assert.Equal(t, DisruptionReason, c["reason"])
		})
	}
}

// TestPodDeleterErrors checks which failures mean that the pod is gone (the eviction is
// done) and which are to be retried, and the requests sent.
func TestPodDeleterErrors(t *testing.T) {
	uidConflict := apierrors.NewConflict(podsResource, "web-1",
		errors.New("Precondition failed: UID in precondition: uid-old, UID in object meta: uid-new"))
	uidInvalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web-1", field.ErrorList{
		field.Invalid(field.NewPath("metadata", "uid"), "uid-old", "field is immutable")})
	otherInvalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web-1", field.ErrorList{
		field.Invalid(field.NewPath("status", "conditions"), "x", "bad")})
	forbidden := apierrors.NewForbidden(podsResource, "web-1", errors.New(`User "x" cannot delete resource "pods"`))
	tests := []struct {
		name    string
		verb    string // the reactor fails this verb...
		err     error  // ...with this error, every time
		gone    bool
		message string
		writes  []string
	}{
		{"deleted before the status patch", "patch", apierrors.NewNotFound(podsResource, "web-1"), true, "", []string{"patch pods/status"}},
		{"replaced before the status patch", "patch", uidConflict, true, "UID precondition failed", []string{"patch pods/status"}},
		{"replaced before the status patch, as a real server says it", "patch", uidInvalid, true, "UID precondition failed", []string{"patch pods/status"}},
		{"status patch invalid", "patch", otherInvalid, false, "clientgo: patch pods/status shop/web-1", []string{"patch pods/status"}},
		{"deleted before the delete", "delete", apierrors.NewNotFound(podsResource, "web-1"), true, "", []string{"patch pods/status", "delete pods"}},
		{"replaced before the delete", "delete", uidConflict, true, "UID precondition failed", []string{"patch pods/status", "delete pods"}},
		{"delete failed", "delete", apierrors.NewInternalError(errors.New("etcd is down")), false, "etcd is down", []string{"patch pods/status", "delete pods"}},
		{"delete forbidden", "delete", forbidden, false, "clientgo: forbidden: pods delete (shop/web-1)", []string{"patch pods/status", "delete pods"}},
		{"status patch throttled", "patch", apierrors.NewTooManyRequests("slow down", 1), false, "patch pods/status shop/web-1", []string{"patch pods/status"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(testPod("uid-old", 1))
			client.PrependReactor(tc.verb, "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			obs := &removals{}

			err := NewPodDeleter(client, PodDeleterOptions{Observer: obs}).Delete(t.Context(), testRef)

			require.Error(t, err)
			assert.Equal(t, tc.gone, errors.Is(err, eviction.ErrPodGone), "errors.Is(%v, ErrPodGone)", err)
			assert.ErrorIs(t, err, tc.err, "the API error stays in the chain")
			assert.Contains(t, err.Error(), tc.message)
			assert.Equal(t, tc.writes, writes(client.Actions()))
			if tc.gone {
				assert.Equal(t, []string{"shop/web-1 delete gone=true"}, obs.got)
			} else {
				assert.Empty(t, obs.got)
			}
		})
	}
}
