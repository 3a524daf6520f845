package eviction_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// BenchmarkPodStatusUpdate is a pod update that changes only the pod's status, the most
// common pod update (the kubelet's, the node lifecycle controller's marking the pods of an
// unreachable node not ready, the DisruptionTarget condition set before an eviction): one
// op is one PodUpdated, which compares what a decision reads and queues nothing. The old
// and new pods are separate copies, as an informer delivers them.
func BenchmarkPodStatusUpdate(b *testing.B) {
	m, err := eviction.New(eviction.DeleterFunc(nil), &evictiontest.Cache{}, eviction.Options{})
	if err != nil {
		b.Fatal(err)
	}
	old := benchPod("ns", "pod", "node-1", benchTolerating)
	cur := old.DeepCopy()
	cur.Status.Conditions = append(cur.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse})
	b.ReportAllocs()
	for b.Loop() {
		m.PodUpdated(old, cur)
	}
	if n := m.Backlog(); n != 0 {
		b.Fatalf("Backlog() = %d, want 0: a status update is not queued", n)
	}
}
