package device

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction/engine"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestReachability: with Options.Reachability, Ready fails while the API server does not
// answer, and a delete that failed for want of an answer waits out no backoff (a minute
// here) once the server answers again: it is retried at once (+10 s), and Ready succeeds.
// One Reachability serves a clientgo.Controller too, with the device side alongside.
func TestReachability(t *testing.T) {
	for _, alongside := range []bool{false, true} {
		t.Run(map[bool]string{false: "alone", true: "alongside the node side"}[alongside], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reach, err := clientgo.NewReachability(clientgo.ReachabilityOptions{})
				if err != nil {
					t.Fatal(err)
				}
				refused := &url.Error{Op: "Patch", URL: "https://api", Err: syscall.ECONNREFUSED}
				fail := reach.Wrap(roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, refused }))
				answer := reach.Wrap(roundTripFunc(func(*http.Request) (*http.Response, error) {
					return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
				}))
				req, _ := http.NewRequest("GET", "https://api/version", nil)

				opts := Options{Reachability: reach, Engine: engine.Options{Backoff: engine.Backoff{Base: time.Minute, Jitter: -1}}}
				r := &rig{t: t, client: newFakeClient(), start: time.Now(), deletes: map[string]time.Duration{}}
				for _, o := range []runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {noExecute("bad", at(0))}}),
					claim("c0", []dev{{id: "p1/d0"}}, "web"), pod("web", "c0")} {
					if err := r.client.Tracker().Add(o); err != nil {
						t.Fatal(err)
					}
				}
				var down atomic.Bool
				down.Store(true)
				var failures atomic.Int32
				r.client.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					switch {
					case a.GetVerb() != "patch" && a.GetVerb() != "delete":
					case down.Load():
						failures.Add(1)
						_, _ = fail.RoundTrip(req) // what the client's transport sees
						return true, nil, refused
					case a.GetVerb() == "delete":
						r.mu.Lock()
						r.deletes["web"] = time.Since(r.start)
						r.mu.Unlock()
					}
					return false, nil, nil
				})
				var ready func() error
				if alongside {
					factory := clientgo.NewFactory(r.client)
					c, err := NewController(t.Context(), r.client, factory, opts)
					if err != nil {
						t.Fatal(err)
					}
					node, err := clientgo.NewController(t.Context(), r.client, factory, clientgo.Options{Reachability: reach,
						Alongside: []func(ctx context.Context) error{c.Lead}})
					if err != nil {
						t.Fatal(err)
					}
					runInBackground(t, node.Run)
					<-c.Synced()
					synctest.Wait()
					ready = node.Ready
				} else {
					r.stop = r.run(opts)
					ready = r.c.Ready
				}
				if got := failures.Load(); got != 1 {
					t.Errorf("got %d failed requests at +0, want 1", got)
				}
				if err := ready(); err == nil || !strings.Contains(err.Error(), "has not answered") {
					t.Errorf("Ready while the server does not answer: got %v, want an error that says so", err)
				}
				r.sleep(10 * time.Second)
				down.Store(false)
				_, _ = answer.RoundTrip(req)
				synctest.Wait()
				if got, ok := r.deleted("web"); !ok || got != 10*time.Second {
					t.Errorf("web: deleted %v at +%v, want at +10s, when the server answered", ok, got)
				}
				if err := ready(); err != nil {
					t.Errorf("Ready once the server answers: got %v, want nil", err)
				}
			})
		})
	}
}
