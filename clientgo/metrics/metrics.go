package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/clientgo"
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

// kubeBuckets are kube's buckets for pod_deletion_duration_seconds, on both its controllers.
var kubeBuckets = []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240}

// Metrics is the [eviction.Observer] (and [clientgo.DeleteObserver]) that keeps one
// controller's Prometheus metrics:
//
//   - kube's two metrics, when [clientgo.Instrumented].Kube names them, with kube's HELP
//     lines and buckets, no label (the duration in seconds: kube's node side multiplies
//     it by a second, kubernetes#141311; its device side does not);
//   - taintevict_evictions_total{controller, outcome, reason}: see the Outcome constants;
//   - taintevict_evictions_delayed_total{controller, reason}: evictions due that waited for
//     a rate limit (RateLimited) or a budget (Paused), once per change of reason;
//   - with [clientgo.Instrumented].Stats, the gauges taintevict_pending_evictions{controller}
//     and taintevict_delayed_evictions{controller, reason} (alert on reason="Paused" > 0);
//   - taintevict_eviction_lateness_seconds{controller}: when the first Deleter call
//     started, less the deadline;
//   - taintevict_delete_workers{controller}: how many Deleter calls may run at once now,
//     when [clientgo.Instrumented].ActWorkers is set.
//
// The controller label, [clientgo.Instrumented].Controller, lets controllers share a
// registry. Give it to the Deleters as their Observer too (a clientgo Controller does), so
// that it can tell evictions from pods found gone, and by which method; it keeps what a
// Removed tells until the outcome that follows. Its methods are safe for concurrent use
// and do not block. The zero Metrics is not usable: create one with [New].
type Metrics struct {
	clock     clock.PassiveClock
	deletions prometheus.Counter   // nil without kube's names
	duration  prometheus.Histogram // nil without kube's names
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
	how  clientgo.Method
	gone bool
}

var (
	_ eviction.Observer       = (*Metrics)(nil)
	_ clientgo.DeleteObserver = (*Metrics)(nil)
)

// New creates the metrics of the controller c describes and registers them on reg (never
// on the global one, unless that is reg). It fails, registering nothing more, when reg
// refuses one (a second Metrics of the same controller on the same registry, say).
func New(reg prometheus.Registerer, c clientgo.Instrumented) (*Metrics, error) {
	m := &Metrics{clock: c.Clock, removed: map[podID]removal{}}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	label := prometheus.Labels{"controller": c.Controller}
	var cs []prometheus.Collector
	if k := c.Kube; k.Subsystem != "" {
		m.deletions = prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: k.Subsystem, Name: "pod_deletions_total", Help: k.DeletionsHelp,
		})
		m.duration = prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: k.Subsystem, Name: "pod_deletion_duration_seconds", Help: k.DurationHelp, Buckets: kubeBuckets,
		})
		cs = append(cs, m.deletions, m.duration)
	}
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "taintevict", Name: "evictions_total", ConstLabels: label,
		Help: "Evictions by outcome: succeeded, gone, failed (one per failed attempt), skipped and cancelled, with the method or reason.",
	}, []string{"outcome", "reason"})
	m.delayed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "taintevict", Name: "evictions_delayed_total", ConstLabels: label,
		Help: "Evictions that were due and waited, by reason: RateLimited (a rate limit) or Paused (the brake, or a budget); counted when the reason changes.",
	}, []string{"reason"})
	m.lateness = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "taintevict", Name: "eviction_lateness_seconds", ConstLabels: label,
		Help:    "When the first Deleter call of an eviction started, less its deadline, in seconds.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300},
	})
	cs = append(cs, m.outcomes, m.delayed, m.lateness)
	if c.Stats != nil {
		cs = append(cs, newGauges(c.Controller, c.Stats))
	}
	if workers := c.ActWorkers; workers != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "taintevict", Name: "delete_workers", ConstLabels: label,
			Help: "How many Deleter calls may run at once now: it follows the throughput of the calls unless pinned.",
		}, func() float64 { return float64(workers()) }))
	}
	for _, col := range cs {
		if err := reg.Register(col); err != nil {
			return nil, fmt.Errorf("metrics: registering the %q controller's metrics: %w", c.Controller, err)
		}
	}
	return m, nil
}

// Meter is the [clientgo.Meter] that registers the [Metrics] of each controller it
// instruments on one registry. The zero Meter is not usable: create one with [NewMeter].
type Meter struct{ reg prometheus.Registerer }

var _ clientgo.Meter = (*Meter)(nil)

// NewMeter returns the Meter that registers on reg.
func NewMeter(reg prometheus.Registerer) *Meter { return &Meter{reg: reg} }

// Instrument returns New(reg, c) on the Meter's registry.
func (m *Meter) Instrument(c clientgo.Instrumented) (eviction.Observer, error) {
	return New(m.reg, c)
}

// Handler returns the handler of /metrics, for [clientgo.Controller.Handler].
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
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

// Found does nothing: the lateness is of the first call, found or not.
func (m *Metrics) Found(eviction.PodRef) {}

// Removed notes how the Deleter ended the eviction, for the Succeeded that follows.
func (m *Metrics) Removed(pod eviction.PodRef, how clientgo.Method, gone bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removed[key(pod)] = removal{how: how, gone: gone}
}

// Succeeded counts the outcome and, for a pod deleted, kube's two metrics.
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
	if m.deletions == nil {
		return
	}
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
