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
	// Stats, if not nil, gives the Manager's counts for the taintevict_pending_evictions
	// and taintevict_delayed_evictions gauges: the Manager's (or engine's) Stats, which
	// reads counters, so that a scrape costs the same at any number of evictions. nil
	// leaves both gauges out.
	Stats func() eviction.Stats
	// DeleteWorkers, if not nil, gives how many Deleter calls may run at once, for the
	// taintevict_delete_workers gauge when it is scraped: usually manager.DeleteWorkers,
	// which follows the budget unless eviction.Options.DeleteWorkers pins it. nil leaves
	// the gauge out.
	DeleteWorkers func() int
}

// Metrics is the [eviction.Observer] (and [DeleteObserver]) that keeps Prometheus metrics:
//
//   - taint_eviction_controller_pod_deletions_total and
//     taint_eviction_controller_pod_deletion_duration_seconds, kube's two metrics under
//     kube's names: pods deleted, and the time from each pod's deadline to its deletion,
//     in seconds (kube multiplies a duration by a second there, kubernetes#141311);
//   - taintevict_evictions_total{outcome, reason}: see the Outcome constants;
//   - taintevict_evictions_delayed_total{reason}: evictions that were due and had to wait
//     for a rate limit (RateLimited) or the brake (Paused), counted once per change of
//     reason (eviction.Observer.Delayed): how often the budgets acted;
//   - taintevict_pending_evictions and taintevict_delayed_evictions{reason}: gauges of the
//     evictions pending now, and of those among them that are due and wait now for a rate
//     limit or the brake (alert on reason="Paused" above 0), when [MetricsOptions.Stats]
//     is set; read from the Manager at each scrape, so they are exact;
//   - taintevict_eviction_lateness_seconds: when the first Deleter call started, less the
//     deadline (a wait for a budget counts in it);
//   - taintevict_delete_workers: how many Deleter calls may run at once now, when
//     [MetricsOptions.DeleteWorkers] is set.
//
// Give it to the Deleters as their Observer too, so that it can tell evictions from pods
// found gone, and by which method. It registers on the Registerer given to [NewMetrics],
// never the global one. Its methods are safe for concurrent use and do not block.
//
// It keeps nothing per scheduled pod: the deadline comes with the Manager's Started and
// Succeeded. What a Deleter's Removed tells is kept from that call until the Succeeded of
// the same attempt, which follows it (or until the pod's Failed, Cancelled or Skipped, should
// a Deleter report Removed and then fail), so only for the Deleter calls running. The zero
// Metrics is not usable.
type Metrics struct {
	clock     clock.PassiveClock
	deletions prometheus.Counter
	duration  prometheus.Histogram
	outcomes  *prometheus.CounterVec
	delayed   *prometheus.CounterVec
	lateness  prometheus.Histogram

	mu      sync.Mutex
	removed map[podID]removal // Removed told, Succeeded not yet
}

// podID names one pod: a pod re-created under the same name is another.
type podID struct {
	types.NamespacedName
	uid types.UID
}

// removal is how a Deleter said it ended an eviction.
type removal struct {
	how  Method
	gone bool
}

var (
	_ eviction.Observer = (*Metrics)(nil)
	_ DeleteObserver    = (*Metrics)(nil)
)

// NewMetrics creates the metrics and registers them on reg. It fails, registering nothing
// more, when reg refuses one (a second Metrics on the same registry, say).
func NewMetrics(reg prometheus.Registerer, opts MetricsOptions) (*Metrics, error) {
	m := &Metrics{clock: opts.Clock, removed: map[podID]removal{}}
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
	m.delayed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "taintevict", Name: "evictions_delayed_total",
		Help: "Evictions that were due and waited, by reason: RateLimited (a rate limit) or Paused (the brake); counted when the reason changes.",
	}, []string{"reason"})
	m.lateness = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "taintevict", Name: "eviction_lateness_seconds",
		Help:    "When the first Deleter call of an eviction started, less its deadline, in seconds.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300},
	})
	cs := []prometheus.Collector{m.deletions, m.duration, m.outcomes, m.delayed, m.lateness}
	if opts.Stats != nil {
		cs = append(cs, pendingCollector(opts.Stats))
	}
	if opts.DeleteWorkers != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "taintevict", Name: "delete_workers",
			Help: "How many Deleter calls may run at once now: it follows the client's budget and the API server's latency unless pinned.",
		}, func() float64 { return float64(opts.DeleteWorkers()) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("clientgo: registering metrics: %w", err)
		}
	}
	return m, nil
}

func key(pod eviction.PodRef) podID {
	return podID{types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, pod.UID}
}

// Scheduled does nothing: the deadline comes again with Started and Succeeded.
func (m *Metrics) Scheduled(eviction.PodRef, time.Time) {}

// Delayed counts an eviction that is due and waits, by reason.
func (m *Metrics) Delayed(_ eviction.PodRef, reason eviction.Reason) {
	m.delayed.WithLabelValues(string(reason)).Inc()
}

// Cancelled counts the outcome.
func (m *Metrics) Cancelled(pod eviction.PodRef, reason eviction.Reason) {
	m.take(pod)
	m.outcomes.WithLabelValues(OutcomeCancelled, string(reason)).Inc()
}

// Skipped counts the outcome.
func (m *Metrics) Skipped(pod eviction.PodRef, reason eviction.Reason) {
	m.take(pod)
	m.outcomes.WithLabelValues(OutcomeSkipped, string(reason)).Inc()
}

// Started observes the lateness of the first Deleter call: now less due.
func (m *Metrics) Started(_ eviction.PodRef, a eviction.Attempt) {
	if a.First() && !a.Due.IsZero() {
		m.lateness.Observe(max(m.clock.Now().Sub(a.Due), 0).Seconds())
	}
}

// Removed notes how the Deleter ended the eviction, for the Succeeded that follows.
func (m *Metrics) Removed(pod eviction.PodRef, how Method, gone bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removed[key(pod)] = removal{how: how, gone: gone}
}

// Succeeded counts the outcome and, for a pod deleted, kube's two metrics: the duration is
// now less due.
func (m *Metrics) Succeeded(pod eviction.PodRef, a eviction.Attempt, dryRun bool) {
	now := m.clock.Now()
	r := m.take(pod)
	switch {
	case dryRun:
		m.outcomes.WithLabelValues(OutcomeSucceeded, "dry-run").Inc()
		return
	case r.gone:
		m.outcomes.WithLabelValues(OutcomeGone, string(r.how)).Inc()
		return
	case r.how == "":
		r.how = "unknown"
	}
	m.outcomes.WithLabelValues(OutcomeSucceeded, string(r.how)).Inc()
	m.deletions.Inc()
	if !a.Due.IsZero() {
		m.duration.Observe(max(now.Sub(a.Due), 0).Seconds())
	}
}

// Failed counts a failed attempt by the reason of its error: the API server's status reason
// ("Forbidden", "TooManyRequests", ...), "Timeout" for a call that ran out of time,
// "Panic", or "Other".
func (m *Metrics) Failed(pod eviction.PodRef, _ eviction.Attempt, err error) {
	m.take(pod)
	m.outcomes.WithLabelValues(OutcomeFailed, failureReason(err)).Inc()
}

// take returns what Removed told of the pod's current attempt, if anything, and forgets it.
// The common case, nothing, takes the lock but allocates nothing.
func (m *Metrics) take(pod eviction.PodRef) removal {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := key(pod)
	r, ok := m.removed[k]
	if ok {
		delete(m.removed, k)
	}
	return r
}

func failureReason(err error) string {
	var panicked *eviction.PanicError
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
