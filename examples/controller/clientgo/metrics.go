package clientgo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/timedqueue"
)

// Outcomes, the values of the outcome label of taintevict_evictions_total.
const (
	OutcomeSucceeded = "succeeded" // reason: the Method, "dry-run", or "unknown"
	OutcomeGone      = "gone"      // reason: the Method that found the pod gone
	OutcomeFailed    = "failed"    // one failed attempt; reason: the API status reason
	OutcomeSkipped   = "skipped"   // reason: the eviction.Reason
	OutcomeCancelled = "cancelled" // reason: the eviction.Reason
)

// kubeBuckets are kube's buckets for pod_deletion_duration_seconds, in seconds: 5 ms to 4 min.
var kubeBuckets = []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240}

// MetricsOptions configures [Metrics]. The zero value is ready to use.
type MetricsOptions struct {
	// Clock tells the time of the decisions. nil means the real clock; use the Manager's.
	Clock clock.PassiveClock
	// Pending, if not nil, gives the number of pending evictions for the
	// taintevict_pending_evictions gauge when it is scraped: usually
	// len(manager.Pending()), which is exact. nil leaves the gauge out.
	Pending func() int
}

// Metrics is the [eviction.Observer] (and [DeleteObserver]) that keeps Prometheus metrics:
//
//   - taint_eviction_controller_pod_deletions_total and
//     taint_eviction_controller_pod_deletion_duration_seconds, kube's two metrics under
//     kube's names: pods deleted, and the time from each pod's deadline to its deletion,
//     in seconds (kube multiplies a duration by a second there, kubernetes#141311);
//   - taintevict_evictions_total{outcome, reason}: see the Outcome constants;
//   - taintevict_pending_evictions: a gauge, when [MetricsOptions.Pending] is set;
//   - taintevict_eviction_lateness_seconds: when the first Deleter call started, less the
//     deadline.
//
// Give it to the Deleters as their Observer too, so that it can tell evictions from pods
// found gone, and by which method. It registers on the Registerer given to [NewMetrics],
// never the global one. Its methods are safe for concurrent use and do not block. It keeps
// each scheduled pod's deadline until the eviction ends; the zero Metrics is not usable.
type Metrics struct {
	clock     clock.PassiveClock
	deletions prometheus.Counter
	duration  prometheus.Histogram
	outcomes  *prometheus.CounterVec
	lateness  prometheus.Histogram

	mu    sync.Mutex
	evics map[types.NamespacedName]*tracked
}

// tracked is what Metrics knows of one scheduled eviction.
type tracked struct {
	at      time.Time
	how     Method // "" until a DeleteObserver call
	gone    bool
	started bool
}

var (
	_ eviction.Observer = (*Metrics)(nil)
	_ DeleteObserver    = (*Metrics)(nil)
)

// NewMetrics creates the metrics and registers them on reg. It fails, registering nothing
// more, when reg refuses one (a second Metrics on the same registry, say).
func NewMetrics(reg prometheus.Registerer, opts MetricsOptions) (*Metrics, error) {
	m := &Metrics{clock: opts.Clock, evics: map[types.NamespacedName]*tracked{}}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	m.deletions = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: "taint_eviction_controller", Name: "pod_deletions_total",
		Help: "Total number of Pods deleted by TaintEvictionController since its start.",
	})
	m.duration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: "taint_eviction_controller", Name: "pod_deletion_duration_seconds",
		Help:    "Latency, in seconds, between the time when a taint effect has been activated for the Pod and its deletion via TaintEvictionController.",
		Buckets: kubeBuckets,
	})
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "taintevict", Name: "evictions_total",
		Help: "Evictions by outcome: succeeded, gone, failed (one per failed attempt), skipped and cancelled, with the method or reason.",
	}, []string{"outcome", "reason"})
	m.lateness = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "taintevict", Name: "eviction_lateness_seconds",
		Help:    "When the first Deleter call of an eviction started, less its deadline, in seconds.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300},
	})
	cs := []prometheus.Collector{m.deletions, m.duration, m.outcomes, m.lateness}
	if opts.Pending != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "taintevict", Name: "pending_evictions",
			Help: "Evictions scheduled and not yet started or retried.",
		}, func() float64 { return float64(opts.Pending()) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("clientgo: registering metrics: %w", err)
		}
	}
	return m, nil
}

func key(pod eviction.PodRef) types.NamespacedName {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
}

// Scheduled remembers the deadline.
func (m *Metrics) Scheduled(pod eviction.PodRef, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.evics[key(pod)]
	if t == nil {
		t = &tracked{}
		m.evics[key(pod)] = t
	}
	t.at = at
}

// Cancelled counts the outcome, and forgets the pod.
func (m *Metrics) Cancelled(pod eviction.PodRef, reason eviction.Reason) {
	m.end(pod)
	m.outcomes.WithLabelValues(OutcomeCancelled, string(reason)).Inc()
}

// Skipped counts the outcome, and forgets the pod.
func (m *Metrics) Skipped(pod eviction.PodRef, reason eviction.Reason) {
	m.end(pod)
	m.outcomes.WithLabelValues(OutcomeSkipped, string(reason)).Inc()
}

// Started observes the lateness of the first attempt.
func (m *Metrics) Started(pod eviction.PodRef, attempt int) {
	now := m.clock.Now()
	m.mu.Lock()
	t := m.evics[key(pod)]
	first := t != nil && !t.started
	if first {
		t.started = true
	}
	m.mu.Unlock()
	if first {
		m.lateness.Observe(max(now.Sub(t.at), 0).Seconds())
	}
}

// Removed notes how the Deleter ended the eviction, for Succeeded.
func (m *Metrics) Removed(pod eviction.PodRef, how Method, gone bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.evics[key(pod)]; t != nil {
		t.how, t.gone = how, gone
	}
}

// Succeeded counts the outcome and, for a pod deleted, kube's two metrics.
func (m *Metrics) Succeeded(pod eviction.PodRef, _ int, dryRun bool) {
	now := m.clock.Now()
	t := m.end(pod)
	switch {
	case dryRun:
		m.outcomes.WithLabelValues(OutcomeSucceeded, "dry-run").Inc()
		return
	case t.gone:
		m.outcomes.WithLabelValues(OutcomeGone, string(t.how)).Inc()
		return
	case t.how == "":
		t.how = "unknown"
	}
	m.outcomes.WithLabelValues(OutcomeSucceeded, string(t.how)).Inc()
	m.deletions.Inc()
	if !t.at.IsZero() {
		m.duration.Observe(max(now.Sub(t.at), 0).Seconds())
	}
}

// Failed counts a failed attempt by the reason of its error: the API server's status reason
// ("Forbidden", "TooManyRequests", ...), "Timeout" for a call that ran out of time,
// "Panic", or "Other".
func (m *Metrics) Failed(_ eviction.PodRef, _ int, err error) {
	m.outcomes.WithLabelValues(OutcomeFailed, failureReason(err)).Inc()
}

// end forgets the pod and returns what was known of it.
func (m *Metrics) end(pod eviction.PodRef) tracked {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.evics[key(pod)]
	delete(m.evics, key(pod))
	if t == nil {
		return tracked{}
	}
	return *t
}

func failureReason(err error) string {
	var panicked *timedqueue.PanicError
	switch {
	case errors.As(err, &panicked):
		return "Panic"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "Timeout"
	}
	if r := apierrors.ReasonForError(err); r != metav1.StatusReasonUnknown {
		return string(r)
	}
	return "Other"
}
