package main

// This file is what makes the simulation deterministic. The Manager works asynchronously:
// NodeUpdated and PodUpdated only queue work, event workers process it, and delete workers
// evict pods when the eviction queue's timer fires. To print a stable timeline, the
// simulation waits after every step until all of that is done (settle), and only then prints
// and moves the clock. Nothing sleeps and nothing polls: settle waits on notifications from
// three small wrappers around what the Manager is given.
//
//   - simCache wraps evictiontest.Cache. After a step's updates, settle sends one marker pod
//     update for every node; a marker comes back through Cache.Pod once the event worker of
//     its node has done all the work queued before it.
//   - sim is the Observer. It records every decision and counts the evictions that are due
//     and have not ended yet.
//   - simClock wraps the FakeClock to see the timer of the eviction queue. A timer armed from
//     a reading of the clock taken just before a step would fire one step late: when work is
//     due while a timer is armed, settle fires it, and the queue looks at the clock again.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// settleTimeout bounds, in real time, how long settle waits for the Manager. It is reached
// only if the Manager misbehaves; then the simulation fails instead of hanging.
const settleTimeout = 10 * time.Second

// markerNamespace holds the marker pods that settle sends; they never enter the cache.
const markerNamespace = "simulation-marker"

// event is one decision of the Manager, as the Observer saw it.
type event struct {
	now    time.Time // the simulated time
	kind   evictiontest.Kind
	pod    eviction.PodRef
	at     time.Time       // Scheduled: when the pod is due
	reason eviction.Reason // Cancelled, Skipped
	err    error           // Failed
}

// sim runs a Manager over a simulated cluster and knows when the Manager is idle.
type sim struct {
	clock   *simClock
	cache   *simCache
	m       *eviction.Manager
	nodes   []string      // every node, for the markers
	changed chan struct{} // a notification: something the idle check reads may have changed
	stop    func() error

	mu      sync.Mutex
	markers int                          // markers sent and not seen yet
	seq     int                          // names the markers
	due     map[types.NamespacedName]int // evictions due and not ended; < 0: ended before reported due
	events  []event                      // decisions not printed yet
}

// newSim starts a Manager over cache on a fake clock set to start. del is its Deleter.
func newSim(start time.Time, nodes []string, del eviction.Deleter) (*sim, error) {
	s := &sim{
		nodes:   nodes,
		changed: make(chan struct{}, 1),
		due:     make(map[types.NamespacedName]int),
	}
	s.clock = &simClock{fake: testclock.NewFakeClock(start), notify: s.notify}
	s.cache = &simCache{Cache: &evictiontest.Cache{}, sim: s}
	m, err := eviction.New(del, s.cache, eviction.Options{Clock: s.clock, Observer: s})
	if err != nil {
		return nil, err
	}
	s.m = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	s.stop = func() error {
		cancel()
		if err := <-done; err != context.Canceled {
			return fmt.Errorf("Manager.Run returned %v", err)
		}
		return nil
	}
	return s, nil
}

// notify wakes settle.
func (s *sim) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// advanceTo moves the clock to t and waits for the evictions due by then.
func (s *sim) advanceTo(t time.Time) error {
	// Every eviction due by t runs once the clock is there: count it before it moves.
	s.mu.Lock()
	for _, p := range s.m.Pending() {
		if !p.At.After(t) {
			s.due[key(p.Pod)]++
		}
	}
	s.mu.Unlock()
	s.clock.setTime(t)
	return s.settle()
}

// settle waits until the Manager has processed every update sent so far and every eviction
// that is due has ended.
func (s *sim) settle() error {
	s.mu.Lock()
	s.seq++
	s.markers += len(s.nodes)
	seq := s.seq
	s.mu.Unlock()
	for _, node := range s.nodes {
		s.m.PodUpdated(nil, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: markerNamespace, Name: fmt.Sprintf("marker-%d-%s", seq, node)},
			Spec:       v1.PodSpec{NodeName: node},
		})
	}
	timeout := time.NewTimer(settleTimeout)
	defer timeout.Stop()
	for !s.idle() {
		select {
		case <-s.changed:
		case <-timeout.C:
			return fmt.Errorf("the Manager did not settle within %v (simulated time %s)", settleTimeout, s.clock.Now())
		}
	}
	return nil
}

// idle reports whether the Manager has nothing left to do at the current simulated time.
func (s *sim) idle() bool {
	now := s.clock.Now()
	if slices.ContainsFunc(s.m.Pending(), func(p eviction.Pending) bool { return !p.At.After(now) }) {
		// Due work that no delete worker has taken yet. A timer armed now was armed from a
		// reading of the clock before the last step: fire it (a spurious wake-up is harmless:
		// the queue reads the clock again).
		s.clock.fireArmed()
		return false
	}
	s.mu.Lock()
	busy := s.markers > 0
	for _, n := range s.due {
		busy = busy || n > 0
	}
	s.mu.Unlock()
	return !busy && s.m.Backlog() == 0
}

// take returns the decisions recorded since the last call.
func (s *sim) take() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.events
	s.events = nil
	return ev
}

// record keeps e and adds dueDelta to the pod's count of due evictions (only when the count
// is positive, with ifDue).
func (s *sim) record(e event, dueDelta int, ifDue bool) {
	e.now = s.clock.Now()
	k := key(e.pod)
	s.mu.Lock()
	s.events = append(s.events, e)
	if !ifDue || s.due[k] > 0 {
		s.due[k] += dueDelta
	}
	s.mu.Unlock()
	s.notify()
}

func key(p eviction.PodRef) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

var _ eviction.Observer = (*sim)(nil)

// Scheduled records a schedule; one due now is an eviction to wait for.
func (s *sim) Scheduled(pod eviction.PodRef, at time.Time) {
	delta := 0
	if !at.After(s.clock.Now()) {
		delta = 1
	}
	s.record(event{kind: evictiontest.Scheduled, pod: pod, at: at}, delta, false)
}

// Cancelled records a cancellation: a due eviction cancelled before it ran has ended.
func (s *sim) Cancelled(pod eviction.PodRef, reason eviction.Reason) {
	s.record(event{kind: evictiontest.Cancelled, pod: pod, reason: reason}, -1, true)
}

// Skipped records a skip. It ends a due eviction; a pod skipped as it was processed (already
// finished, say) was never due, and its count goes below zero, where it is not waited for.
func (s *sim) Skipped(pod eviction.PodRef, reason eviction.Reason) {
	s.record(event{kind: evictiontest.Skipped, pod: pod, reason: reason}, -1, false)
}

// Started records the start of a Deleter call.
func (s *sim) Started(pod eviction.PodRef, _ int) {
	s.record(event{kind: evictiontest.Started, pod: pod}, 0, false)
}

// Succeeded records an eviction that ended with the pod deleted.
func (s *sim) Succeeded(pod eviction.PodRef, _ int, _ bool) {
	s.record(event{kind: evictiontest.Succeeded, pod: pod}, -1, false)
}

// Failed records a failed attempt; the eviction is retried, so it has not ended.
func (s *sim) Failed(pod eviction.PodRef, _ int, err error) {
	s.record(event{kind: evictiontest.Failed, pod: pod, err: err}, 0, false)
}

// simCache is the cluster's cache as the Manager sees it. Marker pods stop here.
type simCache struct {
	*evictiontest.Cache
	sim *sim
}

// Pod returns the pod; a marker is counted as seen and reported as not found.
func (c *simCache) Pod(namespace, name string) (*v1.Pod, error) {
	if namespace == markerNamespace {
		c.sim.mu.Lock()
		c.sim.markers--
		c.sim.mu.Unlock()
		c.sim.notify()
		return nil, nil
	}
	defer c.sim.notify() // the Manager took an update off its backlog
	return c.Cache.Pod(namespace, name)
}

// simClock is a FakeClock whose timers (NewTimer) the simulation can see and fire. It
// implements clock.WithDelayedExecution, so the Manager's delete timeouts use the
// FakeClock's AfterFunc.
type simClock struct {
	fake   *testclock.FakeClock
	notify func()

	mu     sync.Mutex
	timers []*simTimer
}

var _ clock.WithDelayedExecution = (*simClock)(nil)

func (c *simClock) Now() time.Time                         { return c.fake.Now() }
func (c *simClock) Since(t time.Time) time.Duration        { return c.fake.Since(t) }
func (c *simClock) After(d time.Duration) <-chan time.Time { return c.fake.After(d) }
func (c *simClock) Tick(d time.Duration) <-chan time.Time  { return c.fake.Tick(d) }
func (c *simClock) Sleep(d time.Duration)                  { c.fake.Sleep(d) }
func (c *simClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return c.fake.AfterFunc(d, f)
}

// NewTimer returns a timer that fires when setTime reaches now+d, or when fireArmed fires it.
func (c *simClock) NewTimer(d time.Duration) clock.Timer {
	t := &simTimer{clock: c, c: make(chan time.Time, 1)}
	c.mu.Lock()
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	t.Reset(d)
	return t
}

// setTime moves the clock to now and fires the timers due by then.
func (c *simClock) setTime(now time.Time) {
	c.fake.SetTime(now)
	c.mu.Lock()
	for _, t := range c.timers {
		if t.armed && !t.target.After(now) {
			t.fire(now)
		}
	}
	c.mu.Unlock()
}

// fireArmed fires every armed timer now, whatever it was armed for.
func (c *simClock) fireArmed() {
	now := c.fake.Now()
	c.mu.Lock()
	for _, t := range c.timers {
		if t.armed {
			t.fire(now)
		}
	}
	c.mu.Unlock()
}

type simTimer struct {
	clock  *simClock
	c      chan time.Time
	armed  bool      // guarded by clock.mu
	target time.Time // guarded by clock.mu
}

func (t *simTimer) C() <-chan time.Time { return t.c }

func (t *simTimer) Stop() bool {
	t.clock.mu.Lock()
	was := t.armed
	t.armed = false
	t.clock.mu.Unlock()
	t.clock.notify()
	return was
}

func (t *simTimer) Reset(d time.Duration) bool {
	target := t.clock.fake.Now().Add(d)
	t.clock.mu.Lock()
	was := t.armed
	t.armed, t.target = true, target
	t.clock.mu.Unlock()
	t.clock.notify()
	return was
}

// fire sends now on the channel, unless a value is waiting there already. clock.mu is held.
func (t *simTimer) fire(now time.Time) {
	t.armed = false
	select {
	case t.c <- now:
	default:
	}
}

// Delayed records that a due eviction waits for a rate limit or the brake; it has not
// ended. The scenarios here set no budget, so it is not called.
func (s *sim) Delayed(pod eviction.PodRef, reason eviction.Reason) {
	s.record(event{kind: evictiontest.Delayed, pod: pod, reason: reason}, 0, false)
}
