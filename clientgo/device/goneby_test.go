package device

import (
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/eviction/engine"
)

// TestDescribeGoneBy: a pod being deleted is leaving, and gone by its
// deletionTimestamp (engine.Target.GoneBy), as eviction's Source describes it; without it,
// an eviction acted on for a pod on an unreachable node counts for InFlight for good
// (issue 36, defect 2).
func TestDescribeGoneBy(t *testing.T) {
	s := newSource(t, claim("two", []dev{{"p1/d0", []resourcev1.DeviceToleration{}}}, "web"))
	p := pod("web", "two")
	end := metav1.NewTime(time.Date(2030, 1, 1, 10, 0, 30, 0, time.UTC))
	p.DeletionTimestamp = &end
	var d engine.Target
	s.Describe(p, &d)
	if d.Leaving == "" || !d.GoneBy.Equal(end.Time) {
		t.Errorf("got Leaving %q, GoneBy %v; want leaving, gone by %v", d.Leaving, d.GoneBy, end.Time)
	}
}
