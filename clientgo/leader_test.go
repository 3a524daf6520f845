package clientgo

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/eviction"
)

// Short lease timings, so that the tests take about a second on the real clock (the
// elector has no injectable clock for its waits).
func testElection(id string) *LeaderElection {
	return &LeaderElection{Namespace: "taintevict", Identity: id,
		LeaseDuration: 800 * time.Millisecond, RenewDeadline: 400 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
}

// audit records which replica's Deleter deleted which pod, and whether it held the lease
// at the time.
type audit struct {
	mu    sync.Mutex
	calls []string
}

func (a *audit) wrap(id string, c **Controller) func(eviction.Deleter) eviction.Deleter {
	return func(d eviction.Deleter) eviction.Deleter {
		return eviction.DeleterFunc(func(ctx context.Context, pod eviction.PodRef) error {
			a.mu.Lock()
			leading := (*c).Leading()
			a.calls = append(a.calls, id+" "+pod.String()+map[bool]string{true: "", false: " NOT LEADING"}[leading])
			a.mu.Unlock()
			return d.Delete(ctx, pod)
		})
	}
}

func (a *audit) get() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

func leaseHolder(t *testing.T, client *fake.Clientset) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases("taintevict").Get(t.Context(), DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestLeaderElectionFailover: of two replicas, only the one holding the Lease evicts; the
// standby is ready and waits. When the leader stops, it releases the Lease, and the standby
// takes over and evicts what is due next.
func TestLeaderElectionFailover(t *testing.T) {
	client := fake.NewClientset(taintedNode("node-1", time.Now().Add(-time.Minute)), podOn("shop", "web-1", "node-1"))
	var a audit
	var ca, cb *Controller
	wa, wb := newWaiter(), newWaiter()
	var err error
	ca, err = NewController(t.Context(), client, NewFactory(client), Options{LeaderElection: testElection("a"), WrapDeleter: a.wrap("a", &ca), Observers: []eviction.Observer{wa}})
	if err != nil {
		t.Fatal(err)
	}
	cb, err = NewController(t.Context(), client, NewFactory(client), Options{LeaderElection: testElection("b"), WrapDeleter: a.wrap("b", &cb), Observers: []eviction.Observer{wb}})
	if err != nil {
		t.Fatal(err)
	}

	stopA := startController(t, ca)
	wa.until(t, "a evicts web-1", func() bool { return len(a.get()) == 1 })
	if got, want := leaseHolder(t, client), "a"; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	stopB := startController(t, cb)
	<-cb.Synced()
	if err := cb.Ready(); err != nil {
		t.Errorf("the standby is ready: it waits for the Lease: %v", err)
	}
	if cb.Leading() {
		t.Error("cb.Leading(): got true, want false")
	}

	if err := stopA(); err != nil {
		t.Fatalf("a clean stop: %v", err)
	}
	if ca.Ready() == nil {
		t.Errorf("a stopped replica is not ready: got no error, want one")
	}
	// b takes the Lease and evicts a pod added after a left.
	_, err = client.CoreV1().Pods("shop").Create(t.Context(), podOn("shop", "web-2", "node-1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wb.until(t, "b evicts web-2", func() bool { return len(a.get()) == 2 })
	if got, want := a.get(), []string{"a shop/web-1", "b shop/web-2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, want := leaseHolder(t, client), "b"; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
	if got, want := leaseHolder(t, client), ""; !reflect.DeepEqual(got, want) {
		t.Errorf("released on a clean stop: got %v, want %v", got, want)
	}
}

// TestLeaderElectionLost: when the leader cannot renew its Lease, its Manager stops at once
// (a Deleter call under way sees its context cancelled), Run returns ErrLeaseLost, and the
// replica is neither ready nor healthy.
func TestLeaderElectionLost(t *testing.T) {
	client := fake.NewClientset(taintedNode("node-1", time.Now().Add(-time.Minute)), podOn("shop", "web-1", "node-1"))
	var mu sync.Mutex
	failRenewals := false
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failRenewals {
			return true, nil, errors.New("the API server is unreachable")
		}
		return false, nil, nil
	})
	calling := make(chan struct{})
	var afterCancel error
	hang := func(eviction.Deleter) eviction.Deleter {
		return eviction.DeleterFunc(func(ctx context.Context, _ eviction.PodRef) error {
			close(calling)
			<-ctx.Done() // a hanging API call, until the Manager stops it
			afterCancel = ctx.Err()
			return ctx.Err()
		})
	}
	le := testElection("a")
	le.KeepLeaseOnStop = true
	c, err := NewController(t.Context(), client, NewFactory(client), Options{LeaderElection: le, WrapDeleter: hang})
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(t.Context()) }() // it returns by itself, when the Lease is lost
	<-calling
	if !c.Leading() {
		t.Error("c.Leading(): got false, want true")
	}
	mu.Lock()
	failRenewals = true
	mu.Unlock()

	select {
	case err := <-stopped:
		if !errors.Is(err, ErrLeaseLost) {
			t.Errorf("got %v, want %v", err, ErrLeaseLost)
		}
	case <-time.After(failAfter):
		t.Fatal("Run did not return after the Lease was lost")
	}
	if !errors.Is(afterCancel, context.Canceled) {
		t.Errorf("the Deleter's call was cancelled: got %v, want %v", afterCancel, context.Canceled)
	}
	if c.Leading() {
		t.Error("c.Leading(): got true, want false")
	}
	if err := c.Ready(); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Ready: got %v, want %v", err, ErrLeaseLost)
	}
	if err := c.Healthy(); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Healthy: got %v, want %v", err, ErrLeaseLost)
	}
	_, err = client.CoreV1().Pods("shop").Get(t.Context(), "web-1", metav1.GetOptions{})
	if err != nil {
		t.Errorf("nothing deleted: %v", err)
	}
}
