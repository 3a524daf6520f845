package main

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// waitTimeout bounds, in real time, how long a step waits for the Manager. It is reached
// only if the Manager misbehaves; then the simulation fails instead of hanging.
const waitTimeout = 10 * time.Second

// sim runs an eviction.Manager over an in-memory cluster on a fake clock. The cache stands
// for the informers; the Deleter removes the pod and reports its removal, as the API server
// and the informer would; an evictiontest.Observer records the decisions. After each step,
// Manager.WaitIdle says when the Manager has done everything the step caused, so the
// timeline is the same on every run, with no sleeping and no polling.
type sim struct {
	clock *testclock.FakeClock
	cache *evictiontest.Cache
	obs   *evictiontest.Observer
	m     *eviction.Manager
	stop  func() error
}

// newSim starts a Manager on a fake clock set to start.
func newSim(start time.Time) (*sim, error) {
	s := &sim{clock: testclock.NewFakeClock(start), cache: &evictiontest.Cache{}, obs: &evictiontest.Observer{}}
	m, err := eviction.New(s, s.cache, eviction.Options{Clock: s.clock, Observer: s.obs})
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

// Delete deletes the pod, with its UID as a precondition as a real Deleter would send it,
// then reports the deletion as the informer would.
func (s *sim) Delete(_ context.Context, ref eviction.PodRef) error {
	pod, _ := s.cache.Pod(ref.Namespace, ref.Name)
	if pod == nil || pod.UID != ref.UID {
		return eviction.ErrPodGone
	}
	s.cache.DeletePod(ref.Namespace, ref.Name)
	s.m.PodUpdated(pod, nil)
	return nil
}

// setNode stores a node in the cache, then tells the Manager, in the order an informer
// does; setPod does the same for a pod.
func (s *sim) setNode(n *v1.Node) {
	old, _ := s.cache.Node(n.Name)
	s.cache.SetNode(n)
	s.m.NodeUpdated(old, n)
}

func (s *sim) setPod(p *v1.Pod) {
	old, _ := s.cache.Pod(p.Namespace, p.Name)
	s.cache.SetPod(p)
	s.m.PodUpdated(old, p)
}

// stepTo moves the clock to t and waits for what is due by then.
func (s *sim) stepTo(t time.Time) error {
	s.clock.SetTime(t)
	return s.wait()
}

// wait waits until the Manager is idle.
func (s *sim) wait() error {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := s.m.WaitIdle(ctx); err != nil {
		return fmt.Errorf("the Manager did not become idle within %v (simulated time %s): %w", waitTimeout, s.clock.Now(), err)
	}
	return nil
}

// take returns the decisions recorded since the last call; the Manager must be idle.
func (s *sim) take() []evictiontest.Event {
	events := s.obs.Events()
	s.obs.Reset()
	return events
}
