package concurrency

import (
	"slices"
	"sync"
	"time"
)

const (
	// minLatency: the limit grows only while the calls take at least this long; calls
	// answered in microseconds (a fake clientset) have no latency for more workers to hide.
	minLatency = time.Millisecond
	minSamples = 8 // the fewest calls an epoch measures, whatever the limit
	// startupGain: in the start-up the limit doubles while the rate grows by this factor;
	// startupStalls epochs in a row that do not end it. An API server's throughput rises
	// slowly with the calls in flight, by much less than the doubling.
	startupGain   = 1.1
	startupStalls = 2
	tolerance     = 0.05 // the noise a comparison of two epochs' rates ignores
	holdEpochs    = 3    // epochs the limit holds between two probes
	// window is how many measured epochs the best recent rate looks back over: long enough
	// to span a probe cycle, short enough to forget a capacity that went away.
	window  = 8
	backoff = 0.7 // the factor an overload signal applies to the limit
)

// Outcome is how an actuator call ended, as the limit reads it.
type Outcome int

const (
	// Done: the call succeeded.
	Done Outcome = iota
	// Failed: the call failed for a reason of its target's: it counts as served, but does
	// not set the epoch's least latency (a refusal may come faster than an action).
	Failed
	// Overloaded: the server refused the call for load: the limit backs off.
	Overloaded
)

// phase is where the rule is in its cycle.
type phase int

const (
	startup phase = iota // doubling while the rate grows
	hold                 // holding for holdEpochs
	base                 // measuring the rate at the limit, before a probe
	up                   // measuring a larger limit
	down                 // measuring a smaller limit
)

// Limit decides how many actuator calls may run at once by the rate at which they
// complete, measured each epoch (the calls begun since the limit last changed) by Little's
// law. Calls refused for load are left out, and an epoch whose calls in flight never came
// near the limit measured the demand, and is not used. It starts at floor and doubles
// while the rate rises by startupGain, as TCP BBR's start-up. Then it cycles: it holds,
// measures, tries a quarter more and keeps it if the rate rises by tolerance, or else a
// fifth less and keeps it if the rate stays within tolerance of the rate before and within
// twice that of the best of the last window epochs. An Overloaded call brings it down by
// backoff, once an epoch, and the probes stay below that limit for a while. It is safe for
// concurrent use.
type Limit struct {
	mu          sync.Mutex
	set         func(int) int // applies a limit
	limit       int
	floor, ceil int
	fixed       bool
	inflight    int

	epoch uint64 // counts the changes of the limit; a Call measures only its own epoch
	ep    epochStats
	phase phase

	stalls    int       // start-up epochs in a row without startupGain
	grownRate float64   // in the start-up, the rate at the limit before the last doubling
	held      int       // epochs held so far
	baseRate  float64   // the rate at baseLimit, which a probe is measured against
	baseLimit int       // the limit a failed probe returns to
	recent    []float64 // the rates of the last window measured epochs, newest last
	// overloadAt is the limit at the last overload signal (0: none lately): probes stay
	// below it for 2 × window measured epochs (overloadAge).
	overloadAt, overloadAge int
}

// epochStats is what the calls of the current epoch measured.
type epochStats struct {
	n       int           // calls ended
	peak    int           // the most calls in flight since the epoch began
	time    time.Duration // the sum of their latencies
	start   time.Time     // its first call's Begin (zero: none yet)
	area    float64       // calls in flight × seconds since start
	last    time.Time     // the last Begin or End
	minRTT  time.Duration // the least latency among them
	started bool          // minRTT is set: a call of this epoch that acted has ended
}

// Call is one actuator call, from Begin to End.
type Call struct {
	start time.Time
	epoch uint64
}

// New returns a limit pinned at fixed, when fixed is positive; otherwise one that starts at
// floor (at most ceil) and moves between floor and ceil. It applies each limit with set,
// which returns the limit applied.
func New(fixed, floor, ceil int, set func(int) int) *Limit {
	c := &Limit{set: set, fixed: fixed > 0}
	if c.fixed {
		c.floor, c.ceil = fixed, fixed
	} else {
		c.ceil = max(ceil, 1)
		c.floor = max(min(floor, c.ceil), 1)
	}
	c.limit = c.set(c.floor)
	return c
}

// Begin counts an actuator call that starts at now and returns it, for End.
func (c *Limit) Begin(now time.Time) Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance(now)
	if c.ep.start.IsZero() { // after a decrease: once the calls came down to the new limit
		c.ep.start = now
	}
	c.inflight++
	c.ep.peak = max(c.ep.peak, c.inflight)
	return Call{start: now, epoch: c.epoch}
}

// End counts the end at now of call, with its outcome, and moves the limit at the end of
// an epoch or on an overload signal.
func (c *Limit) End(call Call, now time.Time, o Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance(now)
	c.inflight--
	if c.fixed {
		return
	}
	if o == Overloaded && call.epoch == c.epoch { // once an epoch: the calls of the next are the test
		c.backOff()
		return
	}
	if o != Overloaded && call.epoch == c.epoch {
		rtt := now.Sub(call.start)
		c.ep.n++
		c.ep.time += rtt
		if o == Done && (!c.ep.started || rtt < c.ep.minRTT) {
			c.ep.minRTT, c.ep.started = rtt, true
		}
		if c.ep.n >= c.epochCalls() {
			c.endEpoch(now)
			return
		}
	}
	if c.inflight == 0 && c.ep.n > 0 {
		c.newEpoch(c.limit) // the calls stopped: the next burst is measured afresh
	}
}

// endEpoch moves the limit by what the epoch measured.
func (c *Limit) endEpoch(now time.Time) {
	ep := c.ep
	span := now.Sub(ep.start).Seconds()
	// Not nearly full (a worker between two calls is not in flight): the demand bound this
	// epoch, not the limit; or a clock that did not move: it measured nothing.
	if ep.peak*4 < c.limit*3 || ep.time <= 0 || span <= 0 {
		c.newEpoch(c.limit)
		return
	}
	// Little's law: the calls in flight on average over the epoch, over their latency.
	rate := (ep.area / span) / (ep.time.Seconds() / float64(ep.n))
	if c.overloadAge++; c.overloadAge > 2*window {
		c.overloadAt = 0
	}
	c.recent = append(c.recent, rate)
	if len(c.recent) > window {
		c.recent = c.recent[1:]
	}
	next := c.cycleNext
	if c.phase == startup {
		next = c.startupNext
	}
	c.newEpoch(next(rate, ep.minRTT >= minLatency))
}

// startupNext is the limit after a start-up epoch that measured rate. A doubling that
// bought less than startupGain (or seemed to cost some: the first epochs are noisy) is
// tried once more, so that one noisy epoch, or a slow rise, does not end the phase.
func (c *Limit) startupNext(rate float64, canGrow bool) int {
	grows := canGrow && rate >= startupGain*c.grownRate
	if rate > c.baseRate {
		c.baseRate, c.baseLimit = rate, c.limit
	}
	if canGrow && c.limit < c.ceil && (grows || c.stalls+1 < startupStalls) {
		c.stalls++
		if grows {
			c.grownRate, c.stalls = rate, 0
		}
		return min(2*c.limit, c.ceil)
	}
	// Hold here, or where the best rate was if this one is below it; the probes are not
	// measured against the start-up's rates, which a client's burst may have lifted.
	c.phase, c.held = hold, 0
	c.recent = c.recent[:0]
	if rate < (1-tolerance)*c.baseRate {
		return c.baseLimit
	}
	c.baseLimit = c.limit
	return c.limit
}

// cycleNext is the limit after an epoch of the cycle that measured rate.
func (c *Limit) cycleNext(rate float64, canGrow bool) int {
	switch c.phase {
	case hold:
		if c.held++; c.held >= holdEpochs {
			c.phase = base
		}
	case base:
		c.baseRate, c.baseLimit = rate, c.limit
		return c.probe(canGrow)
	case up:
		if rate >= (1+tolerance)*c.baseRate {
			c.baseRate, c.baseLimit = rate, c.limit
			return c.probe(canGrow)
		}
		return c.probe(false) // from baseLimit, down
	case down:
		// Against the rate before, and the best recent one (the highest of noisy measures:
		// twice the tolerance), so that small losses do not add up.
		if rate >= (1-tolerance)*c.baseRate && rate >= (1-2*tolerance)*slices.Max(c.recent) {
			c.baseRate, c.baseLimit = rate, c.limit
			return c.probe(false)
		}
		c.phase, c.held = hold, 0
		return c.baseLimit
	}
	return c.limit
}

// epochCalls is how many calls of its own an epoch measures: as many as the limit, half
// in the start-up (the calls that began when the limit doubled: a round trip).
func (c *Limit) epochCalls() int {
	if c.phase == startup {
		return max(c.limit/2, minSamples)
	}
	return max(c.limit, minSamples)
}

// advance counts the calls in flight from the last Begin or End until now.
func (c *Limit) advance(now time.Time) {
	if d := now.Sub(c.ep.last); !c.ep.start.IsZero() && d > 0 {
		c.ep.area += float64(c.inflight) * d.Seconds()
	}
	c.ep.last = now
}

// probe returns the next limit to measure from baseLimit: a quarter more when higher is
// true and the cap allows it (and a recent overload signal: below its limit), else a fifth
// less when the floor allows it; else baseLimit, held.
func (c *Limit) probe(higher bool) int {
	most := c.ceil
	if c.overloadAt > 0 {
		most = min(most, c.overloadAt-1)
	}
	switch {
	case higher && c.baseLimit < most:
		c.phase = up
		return min(most, max(c.baseLimit+1, c.baseLimit*5/4))
	case c.baseLimit > c.floor:
		c.phase = down
		return max(c.floor, min(c.baseLimit-1, c.baseLimit*4/5))
	}
	c.phase, c.held = hold, 0
	return c.baseLimit
}

// backOff applies an overload signal: the limit by backoff, the rates (of a server that is
// not there any more) forgotten, and a hold before the next probe.
func (c *Limit) backOff() {
	next := max(c.floor, int(float64(c.limit)*backoff))
	c.overloadAt, c.overloadAge = c.limit, 0
	c.recent = c.recent[:0]
	c.phase, c.held, c.baseLimit, c.baseRate, c.grownRate = hold, 0, next, 0, 0
	c.newEpoch(next)
}

// newEpoch applies limit n and starts an epoch.
func (c *Limit) newEpoch(n int) {
	if n != c.limit {
		c.limit = c.set(n)
	}
	c.epoch++
	c.ep = epochStats{peak: c.inflight, last: c.ep.last}
}

// Current returns the limit.
func (c *Limit) Current() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit
}
