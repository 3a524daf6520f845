package whatif_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/whatif"
	"github.com/taintevict/taintevict/tolerations"
)

func TestWhy(t *testing.T) {
	ago := start.Add(-time.Minute)
	future := start.Add(time.Hour)
	taints := []v1.Taint{
		noExecute(down, &ago),
		{Key: "soft", Effect: v1.TaintEffectNoSchedule},
		noExecute("fresh", nil),
		noExecute("skewed", &future),
	}
	tols := []v1.Toleration{
		{Key: "soft", Operator: v1.TolerationOpExists},
		tol("other", ptr.To[int64](300)), // the same seconds, another key: not the one that decides
		tol(down, ptr.To[int64](300)),
		tol(down, nil), // never counts: the first that tolerates down decides
		tol("fresh", nil),
	}
	got := whatif.Why(taints, tols, start, engine.FromTimeAdded, tolerations.Options{})
	want := []whatif.Match{
		{Taint: taints[0], Toleration: &tols[2], Index: 2, Since: ago, FromTimeAdded: true, Deadline: ago.Add(300 * time.Second)},
		{Taint: taints[2], Toleration: &tols[4], Index: 4, Since: start, Forever: true},
		{Taint: taints[3], Index: -1, Since: start, Deadline: start},
	}
	assert.Equal(t, want, got)

	// Counted from first sight, as kube does, TimeAdded is never read.
	got = whatif.Why(taints[:1], tols, start, engine.FromObservation, tolerations.Options{})
	assert.Equal(t, []whatif.Match{{Taint: taints[0], Toleration: &tols[2], Index: 2, Since: start, Deadline: start.Add(300 * time.Second)}}, got)

	// Zero and negative seconds run out at once; no NoExecute taint gives nothing.
	got = whatif.Why(taints[:1], []v1.Toleration{tol(down, ptr.To[int64](-5))}, start, engine.FromTimeAdded, tolerations.Options{})
	assert.Equal(t, ago, got[0].Deadline)
	assert.Empty(t, whatif.Why(taints[1:2], tols, start, engine.FromTimeAdded, tolerations.Options{}))
}

func TestSummaryString(t *testing.T) {
	tests := []struct {
		s    whatif.Summary
		want string
	}{
		{whatif.Summary{}, "evicts no pod"},
		{whatif.Summary{Now: 37, Namespaces: 4, Later: 12, Last: 5 * time.Minute, Forever: 3}, "evicts 37 pods now (4 namespaces), 12 more within 5m0s; 3 tolerate it forever"},
		{whatif.Summary{Now: 1, Namespaces: 1, Forever: 1}, "evicts 1 pod now (1 namespace); 1 tolerates it forever"},
		{whatif.Summary{Later: 2, Last: time.Minute}, "evicts 2 pods within 1m0s"},
		{whatif.Summary{Held: 5, HeldZones: []string{"zone-a"}, Forever: 2}, "evicts no pod; the brake would hold 5 pods in zone zone-a; 2 tolerate it forever"},
		{whatif.Summary{Held: 2, HeldZones: []string{""}, Cancelled: 1}, "evicts no pod; the brake would hold 2 pods; cancels the eviction of 1 pod"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.s.String())
		})
	}
}
