package clientgo

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
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
