package clientgo

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	testRef      = eviction.PodRef{Namespace: "shop", Name: "web-1", UID: "uid-old", Holder: "node-1"}
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

func (r *removals) Found(pod eviction.PodRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, pod.String()+" found")
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
		if err != nil {
			t.Fatal(err)
		}
		merged = obj.(*v1.Pod)
		return false, nil, nil
	})
	obs := &removals{}
	d := NewPodDeleter(client, PodDeleterOptions{Pods: podCache{"shop/web-1": pod}, Observer: obs, Clock: clocktesting.NewFakePassiveClock(testNow)})

	if err := d.Delete(t.Context(), testRef); err != nil {
		t.Fatal(err)
	}

	actions := client.Actions()
	if got, want := writes(actions), []string{"patch pods/status", "delete pods"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if len(actions) != 2 {
		t.Errorf("two requests in all: no GET: got %d (%v), want %d", len(actions), actions, 2)
	}
	patch := actions[0].(k8stesting.PatchAction)
	if got, want := patch.GetPatchType(), types.StrategicMergePatchType; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	var body map[string]any
	if err := json.Unmarshal(patch.GetPatch(), &body); err != nil {
		t.Fatal(err)
	}
	if got, want := body, map[string]any{
		"metadata": map[string]any{"uid": "uid-old"},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "DisruptionTarget", "status": "True", "observedGeneration": float64(3),
			"lastTransitionTime": "2026-11-30T12:00:00Z",
			"reason":             "DeletionByTaintManager", "message": "Taint manager: deleting due to NoExecute taint",
		}}},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if merged == nil {
		t.Fatal("merged: got nil, want a value")
	}
	if !slices.ContainsFunc(merged.Status.Conditions, func(c v1.PodCondition) bool { return reflect.DeepEqual(c, ready) }) {
		t.Errorf("other conditions kept: got %v, want them to hold %v", merged.Status.Conditions, ready)
	}
	if len(merged.Status.Conditions) != 2 {
		t.Errorf("got %d (%v), want %d", len(merged.Status.Conditions), merged.Status.Conditions, 2)
	}
	del := actions[1].(k8stesting.DeleteAction)
	if del.GetDeleteOptions().Preconditions == nil {
		t.Fatal("del.GetDeleteOptions().Preconditions: got nil, want a value")
	}
	if got, want := *del.GetDeleteOptions().Preconditions.UID, types.UID("uid-old"); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, want := obs.got, []string{"shop/web-1 found", "shop/web-1 delete gone=false"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestPodDeleterCondition checks the condition against the cached pod as kube computes it:
// a pod marked already gets the same condition again (a patch that changes nothing, whose
// answer says whether the pod is being deleted already); a DisruptionTarget of another
// reason is replaced, keeping its transition time since its status stays.
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
		{"marked already", testPod("uid-old", 2, ours), []string{"patch pods/status", "delete pods"}, "2026-11-30T11:00:00Z", float64(2)},
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
			if err := NewPodDeleter(client, opts).Delete(t.Context(), testRef); err != nil {
				t.Fatal(err)
			}
			actions := client.Actions()
			if got, want := writes(actions), tc.writes; !reflect.DeepEqual(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			if len(actions) < 2 {
				return
			}
			var body struct {
				Status struct{ Conditions []map[string]any }
			}
			if err := json.Unmarshal(actions[0].(k8stesting.PatchAction).GetPatch(), &body); err != nil {
				t.Fatal(err)
			}
			if len(body.Status.Conditions) != 1 {
				t.Fatalf("got %d (%v), want %d", len(body.Status.Conditions), body.Status.Conditions, 1)
			}
			c := body.Status.Conditions[0]
			if got, want := c["lastTransitionTime"], tc.ltt; !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if got, want := c["observedGeneration"], tc.gen; !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if got, want := c["reason"], DisruptionReason; !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// TestPodDeleterNoSecondDelete: a pod that the server shows being deleted already (an
// earlier attempt's DELETE went through and its answer was lost, or a controller killed
// after its DELETE) is not deleted again, whatever the cache shows: the status patch's
// answer says so, and the eviction is done (gone).
func TestPodDeleterNoSecondDelete(t *testing.T) {
	ours := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: DisruptionReason, Message: DisruptionMessage, ObservedGeneration: 1}
	for _, tc := range []struct {
		name   string
		cached *v1.Pod // nil: no cache
	}{
		{"the cache shows the mark, not the delete", testPod("uid-old", 1, ours)},
		{"the cache shows neither", testPod("uid-old", 1)},
		{"no cache", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onServer := testPod("uid-old", 1, ours)
			onServer.DeletionTimestamp = &metav1.Time{Time: testNow}
			onServer.DeletionGracePeriodSeconds = new(int64(30))
			client := fake.NewClientset(onServer)
			obs := &removals{}
			opts := PodDeleterOptions{Observer: obs, Clock: clocktesting.NewFakePassiveClock(testNow)}
			if tc.cached != nil {
				opts.Pods = podCache{"shop/web-1": tc.cached}
			}

			err := NewPodDeleter(client, opts).Delete(t.Context(), testRef)

			if got, want := errors.Is(err, eviction.ErrPodGone), true; got != want {
				t.Errorf("errors.Is(%v, ErrPodGone): got %v, want %v", err, got, want)
			}
			if want := "being deleted already (since 2026-11-30T12:00:00Z)"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("got %v, want an error containing %q", err, want)
			}
			if got, want := writes(client.Actions()), []string{"patch pods/status"}; !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if got, want := obs.got, []string{"shop/web-1 delete gone=true"}; !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
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

			if err == nil {
				t.Fatalf("got no error, want one")
			}
			if got, want := errors.Is(err, eviction.ErrPodGone), tc.gone; !reflect.DeepEqual(got, want) {
				t.Errorf("errors.Is(%v, ErrPodGone): got %v, want %v", err, got, want)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("the API error stays in the chain: got %v, want %v", err, tc.err)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("got %q, want it to contain %q", err.Error(), tc.message)
			}
			if got, want := writes(client.Actions()), tc.writes; !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			// Found once the status patch answered with the pod, before its DELETE.
			var want []string
			if tc.verb == "delete" {
				want = append(want, "shop/web-1 found")
			}
			if tc.gone {
				want = append(want, "shop/web-1 delete gone=true")
			}
			if got := obs.got; !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// TestDeletersConditionReason: PodDeleterOptions.Reason and Message replace kube's node
// reason and message in the condition (the device taint controller's), and a pod marked
// with the node's reason is marked again; EvictionDeleterOptions pass them to the
// fallback that deletes after the PDB timeout.
func TestDeletersConditionReason(t *testing.T) {
	const reason, message = "DeletionByDeviceTaintManager", "Device Taint manager: deleting due to NoExecute taint"
	nodeMarked := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: DisruptionReason, Message: DisruptionMessage, ObservedGeneration: 2}
	deviceMarked := nodeMarked
	deviceMarked.Reason, deviceMarked.Message = reason, message
	patched := func(t *testing.T, actions []k8stesting.Action) map[string]any {
		t.Helper()
		var body struct {
			Status struct{ Conditions []map[string]any }
		}
		if err := json.Unmarshal(actions[0].(k8stesting.PatchAction).GetPatch(), &body); err != nil {
			t.Fatal(err)
		}
		if len(body.Status.Conditions) != 1 {
			t.Fatalf("got %d conditions (%v), want 1", len(body.Status.Conditions), body.Status.Conditions)
		}
		return body.Status.Conditions[0]
	}
	for _, tc := range []struct {
		name   string
		cached v1.PodCondition
		writes []string
	}{
		{"marked by the node controller", nodeMarked, []string{"patch pods/status", "delete pods"}},
		{"marked already", deviceMarked, []string{"patch pods/status", "delete pods"}},
	} {
		t.Run("PodDeleter/"+tc.name, func(t *testing.T) {
			client := fake.NewClientset(testPod("uid-old", 2))
			opts := PodDeleterOptions{Pods: podCache{"shop/web-1": testPod("uid-old", 2, tc.cached)}, Reason: reason, Message: message}
			if err := NewPodDeleter(client, opts).Delete(t.Context(), testRef); err != nil {
				t.Fatal(err)
			}
			actions := client.Actions()
			if got := writes(actions); !reflect.DeepEqual(got, tc.writes) {
				t.Fatalf("got %v, want %v", got, tc.writes)
			}
			if len(actions) == 2 {
				c := patched(t, actions)
				if c["reason"] != reason || c["message"] != message {
					t.Errorf("got reason %v, message %v; want %q, %q", c["reason"], c["message"], reason, message)
				}
			}
		})
	}
	t.Run("EvictionDeleter fallback", func(t *testing.T) {
		client := fake.NewClientset(testPod("uid-old", 1))
		refuse := pdbRefusal()
		evictions(client, &refuse)
		clk := clocktesting.NewFakePassiveClock(testNow)
		d, err := NewEvictionDeleter(client, EvictionDeleterOptions{PDBTimeout: time.Minute, Clock: clk, Reason: reason, Message: message})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Delete(t.Context(), testRef); err == nil {
			t.Fatal("first call: got no error, want the budget's refusal")
		}
		clk.SetTime(testNow.Add(time.Minute))
		if err := d.Delete(t.Context(), testRef); err != nil {
			t.Fatal(err)
		}
		actions := client.Actions()
		if got, want := writes(actions), []string{"create pods/eviction", "patch pods/status", "delete pods"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		if c := patched(t, actions[1:]); c["reason"] != reason || c["message"] != message {
			t.Errorf("got reason %v, message %v; want %q, %q", c["reason"], c["message"], reason, message)
		}
	})
}
