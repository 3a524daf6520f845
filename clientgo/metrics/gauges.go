package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/taintevict/taintevict/eviction"
)

// delayReasons are the reasons of taintevict_delayed_evictions always exported, 0 or not.
var delayReasons = []eviction.Reason{eviction.ReasonRateLimited, eviction.ReasonPaused}

// gauges exports taintevict_pending_evictions and taintevict_delayed_evictions of one
// controller from one call of stats per scrape.
type gauges struct {
	stats            func() eviction.Stats
	pending, delayed *prometheus.Desc
}

func newGauges(controller string, stats func() eviction.Stats) *gauges {
	label := prometheus.Labels{"controller": controller}
	return &gauges{
		stats: stats,
		pending: prometheus.NewDesc("taintevict_pending_evictions",
			"Evictions scheduled and not running: due later, due and waiting for a worker, a retry, a rate limit or a budget.", nil, label),
		delayed: prometheus.NewDesc("taintevict_delayed_evictions",
			"Pending evictions that are due and wait for a rate limit (RateLimited) or the brake or a budget (Paused), by reason.", []string{"reason"}, label),
	}
}

// Describe sends the two descriptions.
func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.pending
	ch <- g.delayed
}

// Collect reads the counts once and sends the gauges.
func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	s := g.stats()
	delayed := s.Delayed
	ch <- prometheus.MustNewConstMetric(g.pending, prometheus.GaugeValue, float64(s.Pending()))
	for _, r := range delayReasons {
		ch <- prometheus.MustNewConstMetric(g.delayed, prometheus.GaugeValue, float64(delayed[r]), string(r))
		delete(delayed, r)
	}
	for r, n := range delayed { // a reason of a later engine
		ch <- prometheus.MustNewConstMetric(g.delayed, prometheus.GaugeValue, float64(n), string(r))
	}
}
