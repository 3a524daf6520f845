package whatif_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
	"github.com/taintevict/taintevict/eviction/whatif"
)

// A target bound to two holders goes at the earliest deadline over its bindings; one bound
// only to an unchanged holder is not in the result.
func TestHolders(t *testing.T) {
	ago := start.Add(-30 * time.Second)
	before, after := &evictiontest.Source{}, &evictiontest.Source{}
	for _, s := range []*evictiontest.Source{before, after} {
		s.SetHolder(engine.Holder{Name: "gpu-0", Taints: []v1.Taint{noExecute("old", &ago)}})
		s.SetHolder(engine.Holder{Name: "gpu-2"})
		s.SetTarget(engine.Target{Key: types.NamespacedName{Namespace: "a", Name: "both"}, UID: "1", Bindings: []engine.Binding{
			{Holder: "gpu-0", Tolerations: []v1.Toleration{tol("old", ptr.To[int64](100))}},
			{Holder: "gpu-1", Tolerations: []v1.Toleration{tol(down, ptr.To[int64](10))}},
		}})
		s.SetTarget(engine.Target{Key: types.NamespacedName{Namespace: "a", Name: "elsewhere"}, UID: "2", Bindings: []engine.Binding{{Holder: "gpu-2"}}})
	}
	before.SetHolder(engine.Holder{Name: "gpu-1"})
	after.SetHolder(engine.Holder{Name: "gpu-1", Taints: []v1.Taint{noExecute(down, nil)}})
	res, err := whatif.Holders[engine.Target]{Before: before, After: after, IDs: []string{"gpu-0", "gpu-1", "gpu-2"},
		Options: whatif.Options{Start: start}}.Simulate(context.Background())
	require.NoError(t, err)
	require.Len(t, res.Changed, 1)
	assert.Equal(t, "gpu-1", res.Changed[0].Name)
	require.NotNil(t, res.Before, "gpu-0 was tainted, so the targets had a fate before")
	require.Len(t, res.Targets, 1)
	got := res.Targets[0]
	assert.Equal(t, "a/both", got.Key.String())
	assert.Equal(t, whatif.Evicted, got.Before.Verdict)
	assert.Equal(t, 70*time.Second, got.Before.At.Sub(start), "before: 100 s from 30 s ago")
	assert.Equal(t, whatif.Evicted, got.After.Verdict)
	assert.Equal(t, 10*time.Second, got.After.At.Sub(start), "after: the new taint's 10 s come first")
	assert.Equal(t, "gpu-1", got.After.Holder)
	require.Len(t, got.Bound, 2)
	assert.Equal(t, "gpu-0", got.Bound[0].Holder)
	assert.Equal(t, "gpu-1", got.Bound[1].Holder)
	assert.True(t, got.Changed())
}

func TestHoldersBadInput(t *testing.T) {
	src := &evictiontest.Source{}
	_, err := whatif.Holders[engine.Target]{Before: src, After: src}.Simulate(context.Background())
	assert.EqualError(t, err, "whatif: Options.Start is zero")
	_, err = whatif.Holders[engine.Target]{Options: whatif.Options{Start: start}}.Simulate(context.Background())
	assert.EqualError(t, err, "whatif: Holders.Before or After is nil")
	res, err := whatif.Holders[engine.Target]{Before: src, After: src, IDs: []string{"nothing"}, Options: whatif.Options{Start: start}}.Simulate(context.Background())
	require.NoError(t, err)
	assert.Empty(t, res.Targets, "no holder changed")
}
