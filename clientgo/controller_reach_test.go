package clientgo

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/eviction"
)

type reachRoundTrip func(*http.Request) (*http.Response, error)

func (f reachRoundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestControllerReachability: with Options.Reachability, Ready fails while the API server
// does not answer; a delete that failed for want of an answer waits out no backoff (a minute
// here) once the server answers again: it is retried at once, and Ready succeeds.
func TestControllerReachability(t *testing.T) {
	client := fake.NewClientset(taintedNode("node-1", time.Now()), podOn("shop", "web-1", "node-1"))
	var down atomic.Bool
	down.Store(true)
	refused := &url.Error{Op: "Patch", URL: "https://api", Err: syscall.ECONNREFUSED}
	client.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if down.Load() && (a.GetVerb() == "patch" || a.GetVerb() == "delete") {
			return true, nil, refused
		}
		return false, nil, nil
	})
	r, err := NewReachability(ReachabilityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fail := r.Wrap(reachRoundTrip(func(*http.Request) (*http.Response, error) { return nil, refused }))
	answer := r.Wrap(reachRoundTrip(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	}))
	req, _ := http.NewRequest("GET", "https://api/version", nil)

	obs := observerAndRemovals{newWaiter(), &removals{}}
	var failures atomic.Int32
	c, err := NewController(t.Context(), client, NewFactory(client), Options{
		Reachability: r,
		Manager:      eviction.Options{Backoff: eviction.Backoff{Base: time.Minute}, Observer: failCounter{obs, &failures}},
	})
	if err != nil {
		t.Fatal(err)
	}
	startController(t, c)
	<-c.Synced()
	obs.until(t, "the first attempt failed", func() bool { return failures.Load() > 0 })
	_, _ = fail.RoundTrip(req) // what the client's transport sees meanwhile
	if err := c.Ready(); err == nil || !strings.Contains(err.Error(), "has not answered") {
		t.Errorf("Ready while the server does not answer: got %v, want an error that says so", err)
	}

	down.Store(false)
	_, _ = answer.RoundTrip(req)
	obs.until(t, "web-1 removed after the server answered", func() bool { return len(obs.list()) == 2 }) // found, removed
	if err := c.Ready(); err != nil {
		t.Errorf("Ready once the server answers: got %v, want nil", err)
	}
	if got := failures.Load(); got != 1 {
		t.Errorf("got %d failed attempts, want 1 (no retry before the server answered)", got)
	}
}

// failCounter counts Failed reports and passes every report on.
type failCounter struct {
	observerAndRemovals
	n *atomic.Int32
}

func (f failCounter) Failed(p eviction.PodRef, a eviction.Attempt, err error) {
	f.n.Add(1)
	f.observerAndRemovals.Failed(p, a, err)
}
