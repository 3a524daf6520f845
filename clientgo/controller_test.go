package clientgo

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/tolerations"
)

// waiter is an Observer that a test waits on: every decision wakes it, and the test then
// checks again whether what it waits for is there.
type waiter struct {
	eviction.NopObserver
	wake chan struct{}
}

var _ eviction.Observer = (*waiter)(nil)

func newWaiter() *waiter { return &waiter{wake: make(chan struct{}, 1)} }

func (w *waiter) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *waiter) Scheduled(eviction.PodRef, time.Time)              { w.poke() }
func (w *waiter) Cancelled(eviction.PodRef, eviction.Reason)        { w.poke() }
func (w *waiter) Skipped(eviction.PodRef, eviction.Reason)          { w.poke() }
func (w *waiter) Succeeded(eviction.PodRef, eviction.Attempt, bool) { w.poke() }
func (w *waiter) Failed(eviction.PodRef, eviction.Attempt, error)   { w.poke() }
func (w *waiter) Delayed(eviction.PodRef, eviction.Reason)          { w.poke() }

// until returns once cond holds, checking at each decision, and fails the test after
// failAfter. The state it checks changes only with decisions.
func (w *waiter) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := time.NewTimer(failAfter)
	defer timeout.Stop()
	for !cond() {
		select {
		case <-w.wake:
		case <-timeout.C:
			t.Fatalf("%s: not after %s", what, failAfter)
		}
	}
}

// startController runs c until the test ends, and returns a function that stops it and
// returns Run's error.
func startController(t *testing.T, c *Controller) func() error {
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(ctx) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() { cancel(); err = <-stopped })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.StatusCode, http.StatusOK; !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %v, want %v", string(body), got, want)
	}
	return string(body)
}

// TestControllerProbes: not ready before the caches sync, ready after; healthy throughout.
func TestControllerProbes(t *testing.T) {
	client := fake.NewClientset()
	c, err := NewController(t.Context(), client, NewFactory(client), Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler(nil))
	defer srv.Close()
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got, want := get("/readyz"), http.StatusServiceUnavailable; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, want := get("/healthz"), http.StatusOK; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, want := get("/metrics"), http.StatusNotFound; !reflect.DeepEqual(got, want) {
		t.Errorf("no registry, no /metrics: got %v, want %v", got, want)
	}
	stop := startController(t, c)
	<-c.Synced()
	if got, want := get("/readyz"), http.StatusOK; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Errorf("a second Run: got %v, want an error that contains %q", err, "more than once")
	}
}

func TestControllerOptions(t *testing.T) {
	client := fake.NewClientset()
	for _, tc := range []struct {
		name string
		opts Options
		want string // a part of the error
	}{
		{"unknown Mode", Options{Mode: "shred"}, `clientgo: unknown Mode "shred"`},
		{"negative PDBTimeout", Options{Mode: ModeEvict, PDBTimeout: -1}, "PDBTimeout is negative"},
		{"negative Workers", Options{Manager: eviction.Options{Workers: -1}}, "clientgo: eviction: engine: Workers (-1), ActWorkers (0) and MaxActWorkers (0) must not be negative"},
		{"negative Backoff", Options{Manager: eviction.Options{Backoff: eviction.Backoff{Base: -1}}}, "clientgo: eviction: engine: Backoff"},
		{"unknown DeadlineSource", Options{Manager: eviction.Options{DeadlineSource: 7}}, "clientgo: eviction: engine: unknown DeadlineSource 7"},
		{"Manager.DryRun", Options{Manager: eviction.Options{DryRun: true}}, `clientgo: Options.Manager.DryRun is set with Mode "delete": ask for a dry run with Mode "dry-run"`},
		{"Manager.DryRun with ModeDryRun", Options{Mode: ModeDryRun, Manager: eviction.Options{DryRun: true}}, "Options.Manager.DryRun is set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewController(t.Context(), client, NewFactory(client), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error that contains %q", err, tc.want)
			}
		})
	}
}

// list returns what r has been told so far.
func (r *removals) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// observerAndRemovals is the Manager's Observer of TestControllerManagerOptions: a waiter
// that is a DeleteObserver too.
type observerAndRemovals struct {
	*waiter
	*removals
}

// TestControllerManagerOptions: every option of the Manager reaches it through
// Options.Manager. ComparisonOperators makes an Lt toleration match, DeadlineSource
// FromObservation counts from when the Manager saw the pod and not from the taint's
// TimeAdded, and Manager.Observer is told the decisions and, being a DeleteObserver, how
// each pod went.
func TestControllerManagerOptions(t *testing.T) {
	hour := int64(3600)
	added := time.Now().Add(-30 * time.Minute)
	at := metav1.NewTime(added)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: v1.NodeSpec{Taints: []v1.Taint{
		{Key: "example.com/health", Value: "3", Effect: v1.TaintEffectNoExecute, TimeAdded: &at}}}}
	lt := podOn("shop", "lt-1", "node-1")
	lt.Spec.Tolerations = []v1.Toleration{{Key: "example.com/health", Operator: v1.TolerationOpLt, Value: "5", Effect: v1.TaintEffectNoExecute, TolerationSeconds: &hour}}
	client := fake.NewClientset(node, lt, podOn("shop", "web-1", "node-1"))
	obs := observerAndRemovals{newWaiter(), &removals{}}
	c, err := NewController(t.Context(), client, NewFactory(client), Options{Manager: eviction.Options{
		Tolerations: tolerations.Options{ComparisonOperators: true}, DeadlineSource: eviction.FromObservation, Observer: obs,
	}})
	if err != nil {
		t.Fatal(err)
	}
	startController(t, c)
	obs.until(t, "web-1 removed and lt-1 pending", func() bool {
		return len(obs.list()) == 2 && len(c.Manager().Pending()) == 1
	})
	web1 := eviction.PodRef{Namespace: "shop", Name: "web-1", UID: podUID("shop", "web-1")}
	if got, want := obs.list(), []string{web1.String() + " found", web1.String() + " delete gone=false"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	p := c.Manager().Pending()[0]
	if got, want := p.Target.Name, "lt-1"; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// From TimeAdded, lt-1 would be due 30 minutes from now; from its observation, an hour
	// from the time the Manager saw it, which is after this test began.
	if want := added.Add(30*time.Minute + time.Hour); p.At.Before(want) {
		t.Errorf("lt-1 due at %v, want at or after %v (an hour after it was observed)", p.At, want)
	}
}
