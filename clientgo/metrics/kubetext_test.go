package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
)

// kubeNodeText is what kube-controller-manager's /metrics serves for its taint eviction
// controller (pkg/controller/tainteviction/metrics, v1.37) after two pods were deleted,
// 0.3 s and 12 s after their deadlines: written out here as kube serves it, HELP lines
// with the [ALPHA] that kube's metrics framework puts in front of an alpha metric's help,
// so that the test compares with kube's text and not with our own strings.
const kubeNodeText = `
# HELP taint_eviction_controller_pod_deletion_duration_seconds [ALPHA] Latency, in seconds, between the time when a taint effect has been activated for the Pod and its deletion via TaintEvictionController.
# TYPE taint_eviction_controller_pod_deletion_duration_seconds histogram
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="0.005"} 0
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="0.025"} 0
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="0.1"} 0
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="0.5"} 1
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="1"} 1
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="2.5"} 1
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="10"} 1
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="30"} 2
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="60"} 2
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="120"} 2
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="180"} 2
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="240"} 2
taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="+Inf"} 2
taint_eviction_controller_pod_deletion_duration_seconds_sum 12.3
taint_eviction_controller_pod_deletion_duration_seconds_count 2
# HELP taint_eviction_controller_pod_deletions_total [ALPHA] Total number of Pods deleted by TaintEvictionController since its start.
# TYPE taint_eviction_controller_pod_deletions_total counter
taint_eviction_controller_pod_deletions_total 2
`

// TestKubeText checks that the node side's kube metrics read as kube-controller-manager's
// text, HELP lines included, through the /metrics handler a Controller serves.
func TestKubeText(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(testNow)
	reg := prometheus.NewPedanticRegistry()
	m, err := New(reg, clientgo.Instrumented{Controller: "node", Kube: clientgo.NodeKubeMetrics, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	for i, late := range []time.Duration{300 * time.Millisecond, 12 * time.Second} {
		pod := eviction.PodRef{Namespace: "ns", Name: "p", UID: types.UID(rune('a' + i)), Holder: "n"}
		clk.SetTime(testNow.Add(late))
		m.Removed(pod, clientgo.MethodDelete, false)
		m.Succeeded(pod, eviction.Attempt{Call: 1, Due: testNow}, false)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(kubeNodeText),
		"taint_eviction_controller_pod_deletion_duration_seconds", "taint_eviction_controller_pod_deletions_total"); err != nil {
		t.Error(err)
	}
	// The served text itself carries kube's HELP lines, byte for byte.
	body := scrape(t, Handler(reg))
	for _, line := range strings.Split(strings.TrimSpace(kubeNodeText), "\n") {
		if strings.HasPrefix(line, "# HELP ") && !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics: got no line %q, want it as kube serves it", line)
		}
	}
}

// scrape returns the body of a GET of h.
func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: got status %d, want %d", rec.Code, http.StatusOK)
	}
	return rec.Body.String()
}
