package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestMain fails the package if an elector's goroutine outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fast has short timings, so that the tests take about a second on the real clock (the
// elector has no injectable clock for its waits).
func fast(id string) Options {
	return Options{Namespace: "taintevict", Identity: id,
		LeaseDuration: 800 * time.Millisecond, RenewDeadline: 400 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
}

func holder(t *testing.T, client *fake.Clientset) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases("taintevict").Get(t.Context(), DefaultName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leader is work under the Lease that says when it starts, and waits for its context.
type leader struct {
	started chan struct{}
	stopped chan struct{}
}

func newLeader() *leader {
	return &leader{started: make(chan struct{}), stopped: make(chan struct{})}
}

func (l *leader) run(ctx context.Context) error {
	close(l.started)
	<-ctx.Done()
	close(l.stopped)
	return nil
}

func TestNew(t *testing.T) {
	if _, err := New(fake.NewClientset(), Options{}); err == nil || !strings.HasPrefix(err.Error(), "lease: ") || !strings.Contains(err.Error(), "Namespace is required") {
		t.Errorf("New without a namespace: got %v, want an error that says the namespace is required", err)
	}
	got := defaults(Options{Namespace: "ns"})
	if got.Name != DefaultName || got.LeaseDuration != DefaultLeaseDuration || got.RenewDeadline != DefaultRenewDeadline ||
		got.RetryPeriod != DefaultRetryPeriod || got.Identity == "" {
		t.Errorf("defaults: got %+v, want kube-controller-manager's timings, the default name and an identity", got)
	}
}

// TestElector: an Elector runs its function while it holds the Lease; a second one waits,
// ready, and takes over when the first stops and releases the Lease; the second releases
// it when it stops.
func TestElector(t *testing.T) {
	client := fake.NewClientset()
	ea, err := New(client, fast("a"))
	if err != nil {
		t.Fatal(err)
	}
	eb, err := New(client, fast("b"))
	if err != nil {
		t.Fatal(err)
	}
	if ea.Ready() == nil {
		t.Error("an Elector that does not run: got Ready nil, want an error")
	}
	a, b := newLeader(), newLeader()
	ctxA, cancelA := context.WithCancel(t.Context())
	doneA := make(chan error, 1)
	go func() { doneA <- ea.Run(ctxA, a.run) }()
	<-a.started
	if !ea.Leading() || ea.Ready() != nil || ea.Healthy() != nil {
		t.Errorf("the leader: got Leading %v, Ready %v, Healthy %v; want true, nil, nil", ea.Leading(), ea.Ready(), ea.Healthy())
	}
	if got := holder(t, client); got != "a" {
		t.Errorf("got the Lease held by %q, want a", got)
	}
	ctxB, cancelB := context.WithCancel(t.Context())
	defer cancelB()
	doneB := make(chan error, 1)
	go func() { doneB <- eb.Run(ctxB, b.run) }()
	cancelA()
	if err := <-doneA; err != nil {
		t.Errorf("a clean stop: got %v, want nil", err)
	}
	select {
	case <-a.stopped:
	default:
		t.Error("a's function still runs after its Run returned")
	}
	<-b.started
	if got := holder(t, client); got != "b" {
		t.Errorf("got the Lease held by %q, want b", got)
	}
	cancelB()
	if err := <-doneB; err != nil {
		t.Errorf("a clean stop: got %v, want nil", err)
	}
	if got := holder(t, client); got != "" {
		t.Errorf("released on a clean stop: got the Lease held by %q, want no one", got)
	}
	if err := eb.Run(t.Context(), b.run); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Errorf("a second Run: got %v, want an error that says so", err)
	}
}

// TestLeadFailure: work under the Lease that returns an error before it is stopped has
// failed. The Elector then stops, releases the Lease, so that a standby takes over, and
// returns the error, which Ready and Healthy report too.
func TestLeadFailure(t *testing.T) {
	boom := errors.New("boom")
	client := fake.NewClientset()
	ea, err := New(client, fast("a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ea.Run(t.Context(), func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Run: got %v, want %v", err, boom)
	}
	if err := ea.Healthy(); !errors.Is(err, boom) {
		t.Errorf("Healthy: got %v, want %v", err, boom)
	}
	if err := ea.Ready(); !errors.Is(err, boom) {
		t.Errorf("Ready: got %v, want %v", err, boom)
	}
	eb, err := New(client, fast("b"))
	if err != nil {
		t.Fatal(err)
	}
	b := newLeader()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- eb.Run(ctx, b.run) }()
	<-b.started // at once: a released the Lease
	if got := holder(t, client); got != "b" {
		t.Errorf("got the Lease held by %q, want b", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("a clean stop: got %v, want nil", err)
	}
}
