package concurrency

import (
	"sync"
	"time"
)

// Vegas's thresholds, in actuator calls waiting at the bottleneck: below alpha the limit
// grows (while every worker is busy), above beta it shrinks.
//
// The limit grows only for calls that take at least minLatency: workers hide latency, and a
// call answered in microseconds (an actuator in the same process, a fake clientset) has
// none to hide; more goroutines than that would only take turns on the processors.
const (
	vegasAlpha = 3
	vegasBeta  = 6
	minLatency = time.Millisecond
)

// Limit decides how many actuator calls may run at once, as TCP Vegas decides a
// congestion window, once a round (as many calls ended as the limit lets run, about one
// round trip): the least latency of the round, against the least latency of any call that
// succeeded (the latency with no queue: Vegas's baseRTT; failures and targets already gone
// are left out, since they can be answered faster than a real action), tells how many
// calls wait at the bottleneck, whether that is the client's rate limiter or the API
// server. While fewer than vegasAlpha wait and every
// worker was busy, the limit doubles a round (slow start) until it first finds a queue, and
// then grows by one; while more than vegasBeta wait, it sheds half the excess a round. So
// the bottleneck always has a few calls waiting (the rate limiter stays busy at any QPS)
// and never many (an API server that slows down under load gets fewer). It is safe for
// concurrent use.
type Limit struct {
	mu          sync.Mutex
	set         func(int) int // applies a limit: the schedule's SetWorkers
	limit       int
	floor, ceil int
	fixed       bool
	inflight    int
	slowStart   bool

	// The round so far: calls ended, whether one of them found every worker busy, and
	// the least latency among them.
	ended     int
	saturated bool
	roundMin  time.Duration

	minRTT time.Duration // the baseline
}

// New returns a limit pinned at fixed, when fixed is positive; otherwise one that starts at
// floor (at most ceil) and moves between floor and ceil. It applies each limit with set,
// which returns the limit applied.
func New(fixed, floor, ceil int, set func(int) int) *Limit {
	c := &Limit{set: set}
	if fixed > 0 {
		c.limit, c.floor, c.ceil, c.fixed = fixed, fixed, fixed, true
	} else {
		c.ceil = ceil
		c.floor = min(floor, c.ceil)
		c.limit, c.slowStart = c.floor, true
	}
	c.set(c.limit)
	return c
}

// Begin counts an actuator call that starts, and returns whether it took the last free
// worker: then the calls are as many as the limit lets run, and more could be.
func (c *Limit) Begin() (saturated bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight++
	return c.inflight >= c.limit
}

// End counts the end of a call that took rtt, started saturated or not, and succeeded
// (acted) or not; at the end of a round it moves the limit as Vegas would. Only calls that
// acted count for the rounds.
func (c *Limit) End(rtt time.Duration, saturated, acted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight--
	if c.fixed || !acted {
		return
	}
	if rtt > 0 && (c.minRTT == 0 || rtt < c.minRTT) {
		c.minRTT = rtt
	}
	c.ended++
	c.saturated = c.saturated || saturated
	if c.roundMin == 0 || rtt < c.roundMin {
		c.roundMin = rtt
	}
	if c.ended < c.limit {
		return
	}
	waiting := 0.0
	if c.roundMin > c.minRTT && c.minRTT > 0 {
		waiting = float64(c.limit) * (1 - float64(c.minRTT)/float64(c.roundMin))
	}
	next := c.limit
	grow := waiting < vegasAlpha && c.saturated && c.roundMin >= minLatency
	switch {
	case grow && c.slowStart:
		next *= 2
	case grow:
		next++
	case waiting > vegasBeta:
		next -= int(waiting-vegasBeta+1) / 2
		c.slowStart = false
	}
	if waiting >= vegasAlpha {
		c.slowStart = false
	}
	next = min(max(next, c.floor), c.ceil)
	if next != c.limit {
		c.limit = c.set(next)
	}
	c.ended, c.saturated, c.roundMin = 0, false, 0
}

// Current returns the limit.
func (c *Limit) Current() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit
}
