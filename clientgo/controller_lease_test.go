package clientgo_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/lease"
	"github.com/taintevict/taintevict/eviction"
)

// The Controller under leader election, with package lease's Elector: these tests import
// clientgo/lease, which imports clientgo, so they are not internal tests.

// testLease has short timings, so that the tests take about a second on the real clock
// (the elector has no injectable clock for its waits).
func testLease(t *testing.T, client *fake.Clientset, id string, keep bool) *lease.Elector {
	t.Helper()
	e, err := lease.New(client, lease.Options{Namespace: "taintevict", Identity: id, KeepLeaseOnStop: keep,
		LeaseDuration: 800 * time.Millisecond, RenewDeadline: 400 * time.Millisecond, RetryPeriod: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// audit records which replica's Deleter deleted which pod, and whether it led at the time.
type audit struct {
	mu    sync.Mutex
	calls []string
}

func (a *audit) wrap(id string, c **clientgo.Controller) func(eviction.Deleter) eviction.Deleter {
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
	return slices.Clone(a.calls)
}

// TestLeaderElectionFailover: of two replicas, only the one that leads evicts; the standby
// is ready and waits. When the leader stops, the standby takes over and evicts what is due
// next.
func TestLeaderElectionFailover(t *testing.T) {
	client := fake.NewClientset(clientgo.TaintedNode("node-1", time.Now().Add(-time.Minute)), clientgo.PodOn("shop", "web-1", "node-1"))
	var a audit
	var ca, cb *clientgo.Controller
	wa, wb := clientgo.NewWaiter(), clientgo.NewWaiter()
	var err error
	ca, err = clientgo.NewController(t.Context(), client, clientgo.NewFactory(client), clientgo.Options{
		Elector: testLease(t, client, "a", false), WrapDeleter: a.wrap("a", &ca), Observers: []eviction.Observer{wa}})
	if err != nil {
		t.Fatal(err)
	}
	cb, err = clientgo.NewController(t.Context(), client, clientgo.NewFactory(client), clientgo.Options{
		Elector: testLease(t, client, "b", false), WrapDeleter: a.wrap("b", &cb), Observers: []eviction.Observer{wb}})
	if err != nil {
		t.Fatal(err)
	}

	stopA := clientgo.StartController(t, ca)
	wa.Until(t, "a evicts web-1", func() bool { return len(a.get()) == 1 })
	stopB := clientgo.StartController(t, cb)
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
	if _, err := client.CoreV1().Pods("shop").Create(t.Context(), clientgo.PodOn("shop", "web-2", "node-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wb.Until(t, "b evicts web-2", func() bool { return len(a.get()) == 2 })
	if got, want := a.get(), []string{"a shop/web-1", "b shop/web-2"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
}

// TestLeaderElectionLost: when the leader cannot renew its Lease, its Manager stops at once
// (a Deleter call under way sees its context cancelled), Run returns ErrLeaseLost, and the
// replica is neither ready nor healthy.
func TestLeaderElectionLost(t *testing.T) {
	client := fake.NewClientset(clientgo.TaintedNode("node-1", time.Now().Add(-time.Minute)), clientgo.PodOn("shop", "web-1", "node-1"))
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
	c, err := clientgo.NewController(t.Context(), client, clientgo.NewFactory(client), clientgo.Options{
		Elector: testLease(t, client, "a", true), WrapDeleter: hang})
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
		if !errors.Is(err, clientgo.ErrLeaseLost) {
			t.Errorf("got %v, want %v", err, clientgo.ErrLeaseLost)
		}
	case <-time.After(clientgo.FailAfter):
		t.Fatal("Run did not return after the Lease was lost")
	}
	if !errors.Is(afterCancel, context.Canceled) {
		t.Errorf("the Deleter's call was cancelled: got %v, want %v", afterCancel, context.Canceled)
	}
	if c.Leading() {
		t.Error("c.Leading(): got true, want false")
	}
	if err := c.Ready(); !errors.Is(err, clientgo.ErrLeaseLost) {
		t.Errorf("Ready: got %v, want %v", err, clientgo.ErrLeaseLost)
	}
	if err := c.Healthy(); !errors.Is(err, clientgo.ErrLeaseLost) {
		t.Errorf("Healthy: got %v, want %v", err, clientgo.ErrLeaseLost)
	}
	if _, err := client.CoreV1().Pods("shop").Get(t.Context(), "web-1", metav1.GetOptions{}); err != nil {
		t.Errorf("nothing deleted: %v", err)
	}
}

// TestAlongsideUnderLease: the work of Options.Alongside runs only on the replica that
// leads, and stops with it; the standby's starts when it takes over.
func TestAlongsideUnderLease(t *testing.T) {
	client := fake.NewClientset()
	a, b := clientgo.NewAlongside(), clientgo.NewAlongside()
	ca, err := clientgo.NewController(t.Context(), client, clientgo.NewFactory(client), clientgo.Options{
		Elector: testLease(t, client, "a", false), Alongside: []func(context.Context) error{a.Run}})
	if err != nil {
		t.Fatal(err)
	}
	cb, err := clientgo.NewController(t.Context(), client, clientgo.NewFactory(client), clientgo.Options{
		Elector: testLease(t, client, "b", false), Alongside: []func(context.Context) error{b.Run}})
	if err != nil {
		t.Fatal(err)
	}
	stopA := clientgo.StartController(t, ca)
	<-a.Started()
	stopB := clientgo.StartController(t, cb)
	<-cb.Synced()
	if b.Runs() != 0 {
		t.Fatal("the standby runs its work alongside")
	}
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	if a.Running() {
		t.Error("a's work alongside still runs after its Run returned")
	}
	<-b.Started() // b took the Lease
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
}

// TestLeadFailureUnderLease: work alongside that fails stops the Controller that leads,
// which returns its error from Run.
func TestLeadFailureUnderLease(t *testing.T) {
	client := fake.NewClientset()
	a := clientgo.NewAlongside()
	c, err := clientgo.NewController(t.Context(), client, clientgo.NewFactory(client), clientgo.Options{
		Elector: testLease(t, client, "a", false), Alongside: []func(context.Context) error{a.Run, clientgo.Failing}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(t.Context()); !errors.Is(err, clientgo.ErrBoom) {
		t.Errorf("Run: got %v, want %v", err, clientgo.ErrBoom)
	}
	if a.Running() {
		t.Error("the other work alongside still runs after Run returned")
	}
}

// TestControllerStartsAtOnceUnderLease is TestControllerStartsAtOnce with an Elector: the
// Lease is taken at once, and the pod due at once goes at +0.
func TestControllerStartsAtOnceUnderLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		clientgo.StartsAtOnce(t, testLease(t, client, "a", false))
	})
}

// slowElector is an Elector whose Run campaigns only once begin is closed: until then it is
// not electing, as any Elector is for a moment between the caches' sync and its Run.
type slowElector struct {
	begin    chan struct{}
	electing chan struct{}
	ended    chan struct{}
}

func (e *slowElector) Run(ctx context.Context, _ func(context.Context) error) error {
	<-e.begin
	close(e.electing)
	<-ctx.Done()
	close(e.ended)
	return nil
}

func (e *slowElector) Ready() error {
	select {
	case <-e.ended:
		return clientgo.ErrNotElecting
	default:
	}
	select {
	case <-e.electing:
		return nil
	default:
		return clientgo.ErrNotElecting
	}
}

func (e *slowElector) Healthy() error { return nil }
func (e *slowElector) Leading() bool  { return false }

// TestControllerReadyBeforeElecting: a Controller whose caches have synced is ready while its
// Elector has not begun to campaign yet (a readiness probe in that moment used to fail, and
// TestLeaderElectionFailover with it, about one run in 30), and not ready once Run returned.
func TestControllerReadyBeforeElecting(t *testing.T) {
	client := fake.NewClientset(clientgo.TaintedNode("node-1", time.Now().Add(-time.Minute)))
	e := &slowElector{begin: make(chan struct{}), electing: make(chan struct{}), ended: make(chan struct{})}
	c, err := clientgo.NewController(t.Context(), client, clientgo.NewFactory(client), clientgo.Options{Elector: e})
	if err != nil {
		t.Fatal(err)
	}
	stop := clientgo.StartController(t, c)
	<-c.Synced()
	if err := c.Ready(); err != nil {
		t.Errorf("synced, the Elector's Run not begun: Ready() = %v, want nil", err)
	}
	close(e.begin)
	<-e.electing
	if err := c.Ready(); err != nil {
		t.Errorf("electing: Ready() = %v, want nil", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(); !errors.Is(err, clientgo.ErrNotElecting) {
		t.Errorf("after Run: Ready() = %v, want ErrNotElecting", err)
	}
}
