package whatif

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"
)

// stepClock is a fake clock that knows when each of its armed timers fires, for the
// simulation to step straight to it.
type stepClock struct {
	*testclock.FakeClock

	mu    sync.Mutex
	armed map[*stepTimer]time.Time // when each armed timer fires
}

var _ clock.WithDelayedExecution = (*stepClock)(nil)

func newStepClock(start time.Time) *stepClock {
	return &stepClock{FakeClock: testclock.NewFakeClock(start), armed: map[*stepTimer]time.Time{}}
}

// stepTimer is the fake clock's timer, with its arming recorded.
type stepTimer struct {
	clock.Timer
	c *stepClock
}

func (c *stepClock) NewTimer(d time.Duration) clock.Timer {
	return c.arm(d, func() clock.Timer { return c.FakeClock.NewTimer(d) })
}

func (c *stepClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return c.arm(d, func() clock.Timer { return c.FakeClock.AfterFunc(d, f) })
}

// arm makes the fake clock's timer and records when it fires.
func (c *stepClock) arm(d time.Duration, make func() clock.Timer) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &stepTimer{Timer: make(), c: c}
	c.armed[t] = c.FakeClock.Now().Add(d)
	return t
}

func (t *stepTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	delete(t.c.armed, t)
	return t.Timer.Stop()
}

func (t *stepTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.c.armed[t] = t.c.FakeClock.Now().Add(d)
	return t.Timer.Reset(d)
}

// set sets the fake clock to t, which fires the timers due by then, and forgets them.
func (c *stepClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.FakeClock.SetTime(t)
	for timer, at := range c.armed {
		if !at.After(t) {
			delete(c.armed, timer)
		}
	}
}

// next returns when the earliest armed timer fires, and false when none is armed. One
// armed for a time at or before now fires at the next set, so next returns it as it is.
func (c *stepClock) next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time
	found := false
	for _, at := range c.armed {
		if !found || at.Before(first) {
			first, found = at, true
		}
	}
	return first, found
}

// untracked reports whether the fake clock has waiters this clock did not arm (an After, a
// Tick, a Ticker): the simulation would not know when to step to them.
func (c *stepClock) untracked() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.FakeClock.Waiters() != len(c.armed)
}
