package outage

import (
	"sync"
	"sync/atomic"

	"k8s.io/client-go/util/workqueue"
)

// queueMetrics is a workqueue.MetricsProvider that keeps, per queue name, how many items
// were added and how many were done: when the two are equal, the queue has nothing queued
// and nothing in progress. Kube's controller has no other sign of being idle.
// kube-controller-manager sets a (Prometheus) provider too, so its queues do this
// bookkeeping in production as well.
type queueMetrics struct {
	mu     sync.Mutex
	queues map[string]*queueCounts
}

type queueCounts struct{ adds, done atomic.Int64 }

var kubeQueues = &queueMetrics{queues: map[string]*queueCounts{}}

// setQueueMetrics installs kubeQueues as client-go's workqueue metrics provider. It must
// run before the queues are made; client-go takes only the first provider set.
var setQueueMetrics = sync.OnceFunc(func() { workqueue.SetProvider(kubeQueues) })

func (m *queueMetrics) counts(name string) *queueCounts {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.queues[name]
	if !ok {
		c = &queueCounts{}
		m.queues[name] = c
	}
	return c
}

// reset gives queues made from now on counters of their own, so that queues of an earlier
// controller under the same names (shut down with work left) do not count.
func (m *queueMetrics) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queues = map[string]*queueCounts{}
}

// idle reports whether every named queue has done all it was given.
func (m *queueMetrics) idle(names ...string) bool {
	for _, n := range names {
		c := m.counts(n)
		if c.adds.Load() != c.done.Load() {
			return false
		}
	}
	return true
}

type counter struct{ n *atomic.Int64 }

func (c counter) Inc() { c.n.Add(1) }

type histogram struct{ n *atomic.Int64 }

func (h histogram) Observe(float64) {
	if h.n != nil {
		h.n.Add(1)
	}
}

type noGauge struct{}

func (noGauge) Inc()        {}
func (noGauge) Dec()        {}
func (noGauge) Set(float64) {}

func (m *queueMetrics) NewDepthMetric(string) workqueue.GaugeMetric { return noGauge{} }
func (m *queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return counter{&m.counts(name).adds}
}
func (m *queueMetrics) NewLatencyMetric(string) workqueue.HistogramMetric { return histogram{} }
func (m *queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return histogram{&m.counts(name).done}
}
func (m *queueMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noGauge{}
}
func (m *queueMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noGauge{}
}
func (m *queueMetrics) NewRetriesMetric(string) workqueue.CounterMetric {
	return counter{new(atomic.Int64)}
}
