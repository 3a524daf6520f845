package clientgo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/timedqueue"
)

// TestMetrics feeds a Metrics the decisions of several evictions on a fake clock and
// checks every series it keeps.
func TestMetrics(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(testNow)
	reg := prometheus.NewPedanticRegistry()
	pending := 7
	m, err := NewMetrics(reg, MetricsOptions{Clock: clk, Pending: func() int { return pending }})
	require.NoError(t, err)
	ref := func(name string) eviction.PodRef {
		return eviction.PodRef{Namespace: "ns", Name: name, UID: types.UID("u-" + name), Node: "n"}
	}

	// a: due at now, started 2 s late, failed once on a timeout, evicted 10 s after its
	// deadline through the Eviction API.
	m.Scheduled(ref("a"), testNow)
	clk.SetTime(testNow.Add(2 * time.Second))
	m.Started(ref("a"), 1)
	m.Failed(ref("a"), 1, fmt.Errorf("eviction: delete: %w", context.DeadlineExceeded))
	clk.SetTime(testNow.Add(10 * time.Second))
	m.Started(ref("a"), 2) // not a second lateness observation
	m.Removed(ref("a"), MethodEvict, false)
	m.Succeeded(ref("a"), 2, false)
	// b: found gone; c: a Deleter that tells nothing; d: dry run; e: skipped; f: cancelled.
	for _, p := range []string{"b", "c", "d", "e", "f"} {
		m.Scheduled(ref(p), testNow)
	}
	m.Started(ref("b"), 1)
	m.Removed(ref("b"), MethodDelete, true)
	m.Succeeded(ref("b"), 1, false)
	m.Started(ref("c"), 1)
	m.Succeeded(ref("c"), 1, false)
	m.Succeeded(ref("d"), 1, true)
	m.Skipped(ref("e"), eviction.ReasonPodTerminating)
	m.Cancelled(ref("f"), eviction.ReasonPodDeleted)
	m.Failed(ref("g"), 1, apierrors.NewTooManyRequests("pdb", 1))
	m.Failed(ref("g"), 2, &timedqueue.PanicError{Value: "boom"})
	m.Failed(ref("g"), 3, errors.New("what"))

	assert.Empty(t, m.evics, "every ended eviction forgotten")
	want := `
# HELP taintevict_evictions_total Evictions by outcome: succeeded, gone, failed (one per failed attempt), skipped and cancelled, with the method or reason.
# TYPE taintevict_evictions_total counter
taintevict_evictions_total{outcome="cancelled",reason="PodDeleted"} 1
taintevict_evictions_total{outcome="failed",reason="Other"} 1
taintevict_evictions_total{outcome="failed",reason="Panic"} 1
taintevict_evictions_total{outcome="failed",reason="Timeout"} 1
taintevict_evictions_total{outcome="failed",reason="TooManyRequests"} 1
taintevict_evictions_total{outcome="gone",reason="delete"} 1
taintevict_evictions_total{outcome="skipped",reason="PodTerminating"} 1
taintevict_evictions_total{outcome="succeeded",reason="dry-run"} 1
taintevict_evictions_total{outcome="succeeded",reason="evict"} 1
taintevict_evictions_total{outcome="succeeded",reason="unknown"} 1
# HELP taintevict_pending_evictions Evictions scheduled and not yet started or retried.
# TYPE taintevict_pending_evictions gauge
taintevict_pending_evictions 7
# HELP taint_eviction_controller_pod_deletions_total Total number of Pods deleted by TaintEvictionController since its start.
# TYPE taint_eviction_controller_pod_deletions_total counter
taint_eviction_controller_pod_deletions_total 2
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"taintevict_evictions_total", "taintevict_pending_evictions", "taint_eviction_controller_pod_deletions_total"))

	// Durations, in seconds: a's 10 s and c's 10 s (c's deadline was testNow too).
	n, sum := histogram(t, m.duration)
	assert.Equal(t, uint64(2), n)
	assert.InDelta(t, 20, sum, 1e-9)
	// Lateness: a's first attempt 2 s late; b and c started at 10 s.
	n, sum = histogram(t, m.lateness)
	assert.Equal(t, uint64(3), n)
	assert.InDelta(t, 2+10+10, sum, 1e-9)
}

// histogram returns the count and sum of h's observations.
func histogram(t *testing.T, h prometheus.Histogram) (uint64, float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(h))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, mfs, 1)
	hist := mfs[0].GetMetric()[0].GetHistogram()
	return hist.GetSampleCount(), hist.GetSampleSum()
}
