package clientgo

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taintevict/taintevict/eviction/engine"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// evictions answers the fake clientset's Evictions: with err while it is set, else by
// deleting the pod, as the API server does when no budget stands in the way.
func evictions(client *fake.Clientset, err *error) {
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		if *err != nil {
			return true, nil, *err
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		return true, nil, client.Tracker().Delete(podsGVR, ev.Namespace, ev.Name)
	})
}

// TestEvictionDeleter evicts in one request, with the pod's UID as a precondition.
func TestEvictionDeleter(t *testing.T) {
	client := fake.NewClientset(testPod("uid-old", 1))
	var refuse error
	evictions(client, &refuse)
	obs := &removals{}
	d, err := NewEvictionDeleter(client, EvictionDeleterOptions{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}

	if err := d.Delete(t.Context(), testRef); err != nil {
		t.Fatal(err)
	}

	actions := client.Actions()
	if got, want := writes(actions), []string{"create pods/eviction"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if len(actions) != 1 {
		t.Errorf("one request in all: got %d (%v), want %d", len(actions), actions, 1)
	}
	ev := actions[0].(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
	if got, want := ev.Namespace, "shop"; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, want := ev.Name, "web-1"; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if ev.DeleteOptions.Preconditions == nil {
		t.Fatal("ev.DeleteOptions.Preconditions: got nil, want a value")
	}
	if got, want := *ev.DeleteOptions.Preconditions.UID, types.UID("uid-old"); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, want := obs.got, []string{"shop/web-1 found", "shop/web-1 evict gone=false"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// pdbRefusal is the Eviction API's 429 for a PodDisruptionBudget, with its cause.
func pdbRefusal() error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget web needs 1 healthy pods and has 1 currently"})
	return err
}

// TestEvictionDeleterPDBTimeout: a budget refuses the eviction (429), which is an ordinary
// failure, retried, and says that the pod was found; once PDBTimeout has passed since the
// first refusal, the pod is deleted as PodDeleter does. Without PDBTimeout it never is.
func TestEvictionDeleterPDBTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{0, 5 * time.Minute} {
		t.Run(timeout.String(), func(t *testing.T) {
			client := fake.NewClientset(testPod("uid-old", 1))
			refuse := pdbRefusal()
			evictions(client, &refuse)
			clk := clocktesting.NewFakePassiveClock(testNow)
			obs := &removals{}
			d, err := NewEvictionDeleter(client, EvictionDeleterOptions{PDBTimeout: timeout, Observer: obs, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}

			for range 3 { // refused at 0, 4 and 4m59s
				err = d.Delete(t.Context(), testRef)
				if err == nil {
					t.Fatalf("got no error, want one")
				}
				if !apierrors.IsTooManyRequests(err) {
					t.Errorf("the 429 stays in the chain: %v", err)
				}
				if engine.IsGone(err) {
					t.Error("engine.IsGone(err): got true, want false")
				}
				clk.SetTime(clk.Now().Add(2*time.Minute + 29*time.Second + 500*time.Millisecond))
			}
			clk.SetTime(testNow.Add(5 * time.Minute))
			err = d.Delete(t.Context(), testRef)
			if timeout == 0 {
				if err == nil {
					t.Fatalf("no timeout: the budget is honoured for ever: got no error, want one")
				}
				if got, want := writes(client.Actions()), []string{"create pods/eviction", "create pods/eviction", "create pods/eviction", "create pods/eviction"}; !reflect.DeepEqual(got, want) {
					t.Errorf("got %v, want %v", got, want)
				}
				if got, want := obs.got, slices.Repeat([]string{"shop/web-1 found"}, 4); !slices.Equal(got, want) {
					t.Errorf("got %v, want %v", got, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := writes(client.Actions()), []string{"create pods/eviction", "create pods/eviction", "create pods/eviction", "patch pods/status", "delete pods"}; !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if got, want := obs.got, append(slices.Repeat([]string{"shop/web-1 found"}, 4), "shop/web-1 delete-after-pdb-timeout gone=false"); !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if len(d.refused) != 0 {
				t.Errorf("the refusal is forgotten: got %v, want none", d.refused)
			}
		})
	}
}

func TestEvictionDeleterErrors(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		gone    bool
		message string
	}{
		{"gone", apierrors.NewNotFound(podsResource, "web-1"), true, ""},
		{"replaced", apierrors.NewConflict(podsResource, "web-1", errors.New("Precondition failed")), true, "UID precondition failed"},
		{"forbidden", apierrors.NewForbidden(podsResource, "web-1", errors.New("RBAC")), false, "clientgo: forbidden: pods/eviction create (shop/web-1)"},
		{"server error", apierrors.NewInternalError(errors.New("etcd is down")), false, "clientgo: create pods/eviction shop/web-1"},
		{"the server's flow control", apierrors.NewTooManyRequests("too many requests", 1), false, "refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(testPod("uid-old", 1))
			evictions(client, &tc.err)
			obs := &removals{}
			d, err := NewEvictionDeleter(client, EvictionDeleterOptions{Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			err = d.Delete(t.Context(), testRef)
			if err == nil {
				t.Fatalf("got no error, want one")
			}
			if got, want := engine.IsGone(err), tc.gone; !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("got %v, want %v", err, tc.err)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("got %q, want it to contain %q", err.Error(), tc.message)
			}
			var want []string // not found: no budget refused it
			if tc.gone {
				want = []string{"shop/web-1 evict gone=true"}
			}
			if got := obs.got; !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	_, err := NewEvictionDeleter(fake.NewClientset(), EvictionDeleterOptions{PDBTimeout: -time.Second})
	if err == nil || !strings.Contains(err.Error(), "clientgo: EvictionDeleterOptions.PDBTimeout is negative") {
		t.Errorf("got %v, want an error that contains %q", err, "clientgo: EvictionDeleterOptions.PDBTimeout is negative")
	}
}

// TestEvictionDeleterForgetsStaleRefusals: a pod refused once and never tried again (its
// eviction was cancelled) is forgotten after PDBTimeout plus an hour, once the map grows.
func TestEvictionDeleterForgetsStaleRefusals(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(testNow)
	d, err := NewEvictionDeleter(fake.NewClientset(), EvictionDeleterOptions{PDBTimeout: time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		d.refusedNow(types.UID(rune('a' + i)))
	}
	clk.SetTime(testNow.Add(time.Minute + staleRefusal + time.Second))
	for i := range 10 {
		d.refusedNow(types.UID("new-" + string(rune('a'+i))))
	}
	if len(d.refused) != 10 {
		t.Errorf("the 60 stale refusals swept when the map passed 64 entries; the 10 new ones kept: got %d (%v), want %d", len(d.refused), d.refused, 10)
	}
}

// apfRefusal is API Priority and Fairness's 429 as client-go reports it: the server answers
// plain text with a Retry-After header, and client-go makes a TooManyRequests error with
// RetryAfterSeconds and no DisruptionBudget cause.
func apfRefusal() error {
	return apierrors.NewGenericServerResponse(429, "POST", podsResource, "web-1", "Too many requests, please try again later.", 1, true)
}

// TestEvictionDeleterPDBTimeoutCountsOnlyBudgets: only a PodDisruptionBudget's refusal
// starts the PDBTimeout clock. The API server's flow control (a 429 without a
// DisruptionBudget cause) says nothing of the pod's budgets: refused by it for longer than
// PDBTimeout, and then by a budget, the pod is still only evicted, until PDBTimeout has
// passed since the budget's first refusal.
func TestEvictionDeleterPDBTimeoutCountsOnlyBudgets(t *testing.T) {
	client := fake.NewClientset(testPod("uid-old", 1))
	refuse := apfRefusal()
	evictions(client, &refuse)
	clk := clocktesting.NewFakePassiveClock(testNow)
	d, err := NewEvictionDeleter(client, EvictionDeleterOptions{PDBTimeout: 5 * time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	try := func(at time.Duration) error {
		clk.SetTime(testNow.Add(at))
		return d.Delete(t.Context(), testRef)
	}
	for _, at := range []time.Duration{0, 3 * time.Minute, 6 * time.Minute} { // flow control only
		if err := try(at); !engine.IsOverload(err) {
			t.Fatalf("at %s: got %v, want the flow control's refusal, an overload", at, err)
		}
	}
	// A budget from 7m: its 429, then its 403 (it allows fewer than no disruption).
	negative := apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}, "web", errors.New("pdb disruptions allowed is negative"))
	negative.ErrStatus.Details.Causes = append(negative.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause})
	for _, r := range []struct {
		at  time.Duration
		err error
	}{{7 * time.Minute, pdbRefusal()}, {11 * time.Minute, negative}} {
		refuse = r.err
		if err := try(r.at); !engine.IsPDBRefusal(err) || engine.IsOverload(err) || !strings.Contains(err.Error(), "refused by a PodDisruptionBudget") {
			t.Fatalf("at %s: got %v, want the budget's refusal", r.at, err)
		}
	}
	if got, want := writes(client.Actions()), slices.Repeat([]string{"create pods/eviction"}, 5); !slices.Equal(got, want) {
		t.Fatalf("no DELETE before 5m of budget refusals: got %v, want %v", got, want)
	}
	if err := try(12 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, want := writes(client.Actions())[5:], []string{"patch pods/status", "delete pods"}; !slices.Equal(got, want) {
		t.Errorf("5m after the budget's first refusal: got %v, want %v", got, want)
	}
}
