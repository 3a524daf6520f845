package clientgo

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
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
	require.NoError(t, err)

	require.NoError(t, d.Delete(t.Context(), testRef))

	actions := client.Actions()
	require.Equal(t, []string{"create pods/eviction"}, writes(actions))
	assert.Len(t, actions, 1, "one request in all")
	ev := actions[0].(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
	assert.Equal(t, "shop", ev.Namespace)
	assert.Equal(t, "web-1", ev.Name)
	require.NotNil(t, ev.DeleteOptions.Preconditions)
	assert.Equal(t, types.UID("uid-old"), *ev.DeleteOptions.Preconditions.UID)
	assert.Equal(t, []string{"shop/web-1 evict gone=false"}, obs.got)
}

// TestEvictionDeleterPDBTimeout: a budget refuses the eviction (429), which is an ordinary
// failure, retried; once PDBTimeout has passed since the first refusal, the pod is deleted
// as PodDeleter does. Without PDBTimeout it never is.
func TestEvictionDeleterPDBTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{0, 5 * time.Minute} {
		t.Run(timeout.String(), func(t *testing.T) {
			client := fake.NewClientset(testPod("uid-old", 1))
			refuse := error(apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10))
			evictions(client, &refuse)
			clk := clocktesting.NewFakePassiveClock(testNow)
			obs := &removals{}
			d, err := NewEvictionDeleter(client, EvictionDeleterOptions{PDBTimeout: timeout, Observer: obs, Clock: clk})
			require.NoError(t, err)

			for range 3 { // refused at 0, 4 and 4m59s
				err = d.Delete(t.Context(), testRef)
				require.Error(t, err)
				assert.True(t, apierrors.IsTooManyRequests(err), "the 429 stays in the chain: %v", err)
				assert.False(t, eviction.IsGone(err))
				clk.SetTime(clk.Now().Add(2*time.Minute + 29*time.Second + 500*time.Millisecond))
			}
			clk.SetTime(testNow.Add(5 * time.Minute))
			err = d.Delete(t.Context(), testRef)
			if timeout == 0 {
				require.Error(t, err, "no timeout: the budget is honoured for ever")
				assert.Equal(t, []string{"create pods/eviction", "create pods/eviction", "create pods/eviction", "create pods/eviction"}, writes(client.Actions()))
				assert.Empty(t, obs.got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{"create pods/eviction", "create pods/eviction", "create pods/eviction", "patch pods/status", "delete pods"}, writes(client.Actions()))
			assert.Equal(t, []string{"shop/web-1 delete-after-pdb-timeout gone=false"}, obs.got)
			assert.Empty(t, d.refused, "the refusal is forgotten")
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(testPod("uid-old", 1))
			evictions(client, &tc.err)
			obs := &removals{}
			d, err := NewEvictionDeleter(client, EvictionDeleterOptions{Observer: obs})
			require.NoError(t, err)
			err = d.Delete(t.Context(), testRef)
			require.Error(t, err)
			assert.Equal(t, tc.gone, eviction.IsGone(err))
			assert.ErrorIs(t, err, tc.err)
			assert.Contains(t, err.Error(), tc.message)
			if tc.gone {
				assert.Equal(t, []string{"shop/web-1 evict gone=true"}, obs.got)
			}
		})
	}
	_, err := NewEvictionDeleter(fake.NewClientset(), EvictionDeleterOptions{PDBTimeout: -time.Second})
	assert.ErrorContains(t, err, "clientgo: EvictionDeleterOptions.PDBTimeout is negative")
}

// TestEvictionDeleterForgetsStaleRefusals: a pod refused once and never tried again (its
// eviction was cancelled) is forgotten after PDBTimeout plus an hour, once the map grows.
func TestEvictionDeleterForgetsStaleRefusals(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(testNow)
	d, err := NewEvictionDeleter(fake.NewClientset(), EvictionDeleterOptions{PDBTimeout: time.Minute, Clock: clk})
	require.NoError(t, err)
	for i := range 60 {
		d.refusedNow(types.UID(rune('a' + i)))
	}
	clk.SetTime(testNow.Add(time.Minute + staleRefusal + time.Second))
	for i := range 10 {
		d.refusedNow(types.UID("new-" + string(rune('a'+i))))
	}
	assert.Len(t, d.refused, 10, "the 60 stale refusals swept when the map passed 64 entries; the 10 new ones kept")
}
