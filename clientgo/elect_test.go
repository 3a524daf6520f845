package clientgo

import (
	"context"
	"errors"
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

// TestAlongside: the work of Options.Alongside runs with the Manager from Run's start (with
// an Elector, only while this replica leads: controller_lease_test.go), and Run returns
// only once it has stopped.
func TestAlongside(t *testing.T) {
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
}

// TestLeadFailure: work alongside that returns an error before it is stopped has failed:
// the Controller stops its Manager and the other work, and returns the error from Run
// (with an Elector too: controller_lease_test.go).
func TestLeadFailure(t *testing.T) {
	client := fake.NewClientset()
	a := newAlongside()
	c, err := NewController(t.Context(), client, NewFactory(client), Options{
		Alongside: []func(context.Context) error{a.run, failing}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(t.Context()); !errors.Is(err, errBoom) {
		t.Errorf("Run: got %v, want %v", err, errBoom)
	}
	if a.running.Load() {
		t.Error("the other work alongside still runs after Run returned")
	}
}

// errBoom is the error of failing, work alongside that fails at once.
var errBoom = errors.New("boom")

func failing(context.Context) error { return errBoom }

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
