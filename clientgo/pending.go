package clientgo

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/taintevict/taintevict/eviction"
)

var (
	pendingDesc = prometheus.NewDesc("taintevict_pending_evictions",
		"Evictions scheduled and not running: due later, due and waiting for a worker, a retry, a rate limit or the brake.", nil, nil)
	delayedDesc = prometheus.NewDesc("taintevict_delayed_evictions",
		"Pending evictions that are due and wait for a rate limit (RateLimited) or the brake (Paused), by reason.", []string{"reason"}, nil)
)

// delayReasons are the reasons of taintevict_delayed_evictions, always exported, 0 or not,
// so that an alert on Paused has a series to read.
var delayReasons = []eviction.Reason{eviction.ReasonRateLimited, eviction.ReasonPaused}

// pendingCollector exports taintevict_pending_evictions and taintevict_delayed_evictions
// from one call of stats per scrape: counters, not a walk over the evictions.
type pendingCollector func() eviction.Stats

// Describe sends the two descriptions.
func (c pendingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- delayedDesc
}

// Collect reads the counts once and sends the gauges.
func (c pendingCollector) Collect(ch chan<- prometheus.Metric) {
	s := c()
	delayed := s.Delayed
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(s.Pending()))
	for _, r := range delayReasons {
		ch <- prometheus.MustNewConstMetric(delayedDesc, prometheus.GaugeValue, float64(delayed[r]), string(r))
		delete(delayed, r)
	}
	for r, n := range delayed { // a reason of a later eviction package
		ch <- prometheus.MustNewConstMetric(delayedDesc, prometheus.GaugeValue, float64(n), string(r))
	}
}
