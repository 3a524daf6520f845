package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// grace is how long a deleted pod takes to terminate: 0 removes it at once; otherwise
	// it is Terminating until reap removes it, as its kubelet would.
	grace time.Duration

	mu   sync.Mutex
	ends map[string]time.Time // "namespace/name" of a Terminating pod -> when it is gone
}

// newSim starts a Manager with opts on a fake clock set to start, its deleted pods taking
// grace to terminate.
func newSim(start time.Time, opts eviction.Options, grace time.Duration) (*sim, error) {
	s := &sim{clock: testclock.NewFakeClock(start), cache: &evictiontest.Cache{}, obs: &evictiontest.Observer{}, grace: grace, ends: map[string]time.Time{}}
	opts.Clock, opts.Observer = s.clock, s.obs
	m, err := eviction.New(s, s.cache, opts)
	if err != nil {
		return nil, err
	}
	s.m = m
	m.Synced() // the simulation feeds its cluster live, as a cluster after the informers synced
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
// then reports the deletion as the informer would: the pod is gone, or, with a grace
// period, Terminating until reap.
func (s *sim) Delete(_ context.Context, ref eviction.PodRef) error {
	pod, _ := s.cache.Pod(ref.Namespace, ref.Name)
	if pod == nil || pod.UID != ref.UID {
		return eviction.ErrPodGone
	}
	if s.grace == 0 {
		s.cache.DeletePod(ref.Namespace, ref.Name)
		s.m.PodUpdated(pod, nil)
		return nil
	}
	if pod.DeletionTimestamp == nil {
		p := pod.DeepCopy()
		end := metav1.NewTime(s.clock.Now().Add(s.grace)) // as the API server sets it: the end of the grace period
		p.DeletionTimestamp = &end
		s.mu.Lock()
		s.ends[ref.String()] = end.Time
		s.mu.Unlock()
		s.setPod(p)
	}
	return nil
}

// reap removes the Terminating pods whose grace period is over, as their kubelet would,
// and returns them as "namespace/name".
func (s *sim) reap() []string {
	now := s.clock.Now()
	s.mu.Lock()
	var gone []string
	for key, at := range s.ends {
		if !at.After(now) {
			gone = append(gone, key)
			delete(s.ends, key)
		}
	}
	s.mu.Unlock()
	for _, key := range gone {
		ns, name, _ := strings.Cut(key, "/")
		if pod := s.cache.DeletePod(ns, name); pod != nil {
			s.m.PodUpdated(pod, nil)
		}
	}
	return gone
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
