package clientgo

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/taintevict/taintevict/eviction"
)

// alongside is work for Options.Alongside that records whether it runs.
type alongside struct {
	running atomic.Bool
	runs    atomic.Int32
	started chan struct{}
}

func newAlongside() *alongside { return &alongside{started: make(chan struct{}, 8)} }

func (a *alongside) run(ctx context.Context) error {
	a.runs.Add(1)
	a.running.Store(true)
	a.started <- struct{}{}
	<-ctx.Done()
	time.Sleep(10 * time.Millisecond) // a slow stop: Run must still wait for it
	a.running.Store(false)
	return nil
}

// TestAlongside: the work of Options.Alongside runs with the Manager, without leader
// election from Run's start and, with it, only on the replica that holds the Lease; Run
// returns only once it has stopped.
func TestAlongside(t *testing.T) {
	t.Run("no leader election", func(t *testing.T) {
		client := fake.NewClientset()
		a := newAlongside()
		c, err := NewController(t.Context(), client, NewFactory(client), Options{Alongside: []func(context.Context) error{a.run}})
		if err != nil {
			t.Fatal(err)
		}
		stop := startController(t, c)
		<-a.started
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if a.running.Load() {
			t.Error("the work alongside still runs after Run returned")
		}
	})
	t.Run("leader election", func(t *testing.T) {
		client := fake.NewClientset()
		a, b := newAlongside(), newAlongside()
		ca, err := NewController(t.Context(), client, NewFactory(client), Options{LeaderElection: testElection("a"), Alongside: []func(context.Context) error{a.run}})
		if err != nil {
			t.Fatal(err)
		}
		cb, err := NewController(t.Context(), client, NewFactory(client), Options{LeaderElection: testElection("b"), Alongside: []func(context.Context) error{b.run}})
		if err != nil {
			t.Fatal(err)
		}
		stopA := startController(t, ca)
		<-a.started
		stopB := startController(t, cb)
		<-cb.Synced()
		if b.runs.Load() != 0 {
			t.Fatal("the standby runs its work alongside")
		}
		if err := stopA(); err != nil {
			t.Fatal(err)
		}
		if a.running.Load() {
			t.Error("a's work alongside still runs after its Run returned")
		}
		<-b.started // b took the Lease
		if err := stopB(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestElector: an Elector runs its function while it holds the Lease; a second one waits,
// ready, and takes over when the first stops.
func TestElector(t *testing.T) {
	client := fake.NewClientset()
	if _, err := NewElector(client, LeaderElection{}); err == nil {
		t.Error("NewElector without a namespace: got no error, want one")
	}
	ea, err := NewElector(client, *testElection("a"))
	if err != nil {
		t.Fatal(err)
	}
	eb, err := NewElector(client, *testElection("b"))
	if err != nil {
		t.Fatal(err)
	}
	if ea.Ready() == nil {
		t.Error("an Elector that does not run: got Ready nil, want an error")
	}
	a, b := newAlongside(), newAlongside()
	ctxA, cancelA := context.WithCancel(t.Context())
	doneA := make(chan error, 1)
	go func() { doneA <- ea.Run(ctxA, a.run) }()
	<-a.started
	if !ea.Leading() || ea.Ready() != nil || ea.Healthy() != nil {
		t.Errorf("the leader: got Leading %v, Ready %v, Healthy %v; want true, nil, nil", ea.Leading(), ea.Ready(), ea.Healthy())
	}
	ctxB, cancelB := context.WithCancel(t.Context())
	defer cancelB()
	doneB := make(chan error, 1)
	go func() { doneB <- eb.Run(ctxB, b.run) }()
	cancelA()
	if err := <-doneA; err != nil {
		t.Errorf("a clean stop: got %v, want nil", err)
	}
	if a.running.Load() {
		t.Error("a's function still runs after its Run returned")
	}
	<-b.started
	if leaseHolder(t, client) != "b" {
		t.Errorf("got the Lease held by %q, want b", leaseHolder(t, client))
	}
	cancelB()
	if err := <-doneB; err != nil {
		t.Errorf("a clean stop: got %v, want nil", err)
	}
}

// TestLeadFailure: work under the Lease that returns an error before it is stopped has
// failed. An Elector then stops, releases the Lease, so that a standby takes over, and
// returns the error, which Ready and Healthy report too; a Controller stops its Manager and
// returns the error from Run.
func TestLeadFailure(t *testing.T) {
	boom := errors.New("boom")
	fail := func(context.Context) error { return boom }
	t.Run("elector", func(t *testing.T) {
		client := fake.NewClientset()
		ea, err := NewElector(client, *testElection("a"))
		if err != nil {
			t.Fatal(err)
		}
		if err := ea.Run(t.Context(), fail); !errors.Is(err, boom) {
			t.Errorf("Run: got %v, want %v", err, boom)
		}
		if err := ea.Healthy(); !errors.Is(err, boom) {
			t.Errorf("Healthy: got %v, want %v", err, boom)
		}
		if err := ea.Ready(); !errors.Is(err, boom) {
			t.Errorf("Ready: got %v, want %v", err, boom)
		}
		eb, err := NewElector(client, *testElection("b"))
		if err != nil {
			t.Fatal(err)
		}
		b := newAlongside()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- eb.Run(ctx, b.run) }()
		<-b.started // at once: a released the Lease
		if got := leaseHolder(t, client); got != "b" {
			t.Errorf("got the Lease held by %q, want b", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("a clean stop: got %v, want nil", err)
		}
	})
	for _, le := range []*LeaderElection{nil, testElection("a")} {
		t.Run(fmt.Sprintf("controller, leader election %v", le != nil), func(t *testing.T) {
			client := fake.NewClientset()
			a := newAlongside()
			c, err := NewController(t.Context(), client, NewFactory(client), Options{LeaderElection: le,
				Alongside: []func(context.Context) error{a.run, fail}})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Run(t.Context()); !errors.Is(err, boom) {
				t.Errorf("Run: got %v, want %v", err, boom)
			}
			if a.running.Load() {
				t.Error("the other work alongside still runs after Run returned")
			}
		})
	}
}

// panicky is an Observer that panics when an eviction starts.
type panicky struct{ eviction.NopObserver }

func (panicky) Started(eviction.PodRef, eviction.Attempt) { panic("observer bug") }

// TestControllerStopsWhenTheManagerFails: an Observer that panics stops the Manager; the
// Controller does not go on without it, still reporting healthy, but stops and returns the
// Manager's *eviction.PanicError from Run.
func TestControllerStopsWhenTheManagerFails(t *testing.T) {
	client := fake.NewClientset(taintedNode("node-1", time.Now().Add(-time.Minute)), podOn("shop", "web", "node-1"))
	c, err := NewController(t.Context(), client, NewFactory(client), Options{Observers: []eviction.Observer{panicky{}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(t.Context()) }()
	select {
	case err := <-done:
		if pe := (*eviction.PanicError)(nil); !errors.As(err, &pe) {
			t.Errorf("Run: got %v, want an *eviction.PanicError", err)
		}
	case <-time.After(failAfter):
		t.Fatalf("Run still runs %s after the Manager failed", failAfter)
	}
}
