package clientgo

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
)

// outageCluster returns a fake clientset with nodes node-0..node-9, the first 6 tainted
// unreachable 10 minutes before now, and on each node a pod that tolerates the taint for
// 300 s: long past due on the tainted ones. Its deletes of pods are recorded.
func outageCluster(now time.Time) (*fake.Clientset, *deleteLog) {
	var objs []runtime.Object
	for i := range 10 {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("node-", i)}}
		if i < 6 {
			n = taintedNode(n.Name, now.Add(-10*time.Minute))
		}
		objs = append(objs, n, tolerating(podOn("shop", fmt.Sprint("web-", i), n.Name), ptrTo(int64(300))))
	}
	client := fake.NewClientset(objs...)
	log := &deleteLog{}
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		log.add(a.(k8stesting.DeleteAction).GetName())
		return false, nil, nil
	})
	return client, log
}

func ptrTo[T any](v T) *T { return &v }

// eventSink returns a clientset that takes every Event it is sent: on a fake clock that
// stands still, the Events of one pod would have the same name, and the cluster's fake
// would refuse the second (and log it).
func eventSink() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, a.(k8stesting.CreateAction).GetObject(), nil
	})
	return c
}

// deleteLog records the names of the pods deleted.
type deleteLog struct {
	mu    sync.Mutex
	names []string
}

func (l *deleteLog) add(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.names = append(l.names, name)
}

func (l *deleteLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.names)
	slices.Sort(out)
	return out
}

// gated holds the informers' handlers back until pods (the pod handler) and nodes (the node
// handler) are closed: the handlers lag behind their caches, and the node handler behind
// the pod handler, as they may when a Controller starts.
type gated struct {
	pods, nodes chan struct{}
}

// factory returns f with its pod and node handlers gated.
func (g gated) factory(f informers.SharedInformerFactory) informers.SharedInformerFactory {
	return wrapHandlers(f,
		func(h cache.ResourceEventHandler) cache.ResourceEventHandler {
			return beforeHandler{h, func() { <-g.pods }}
		},
		func(h cache.ResourceEventHandler) cache.ResourceEventHandler {
			return beforeHandler{h, func() { <-g.nodes }}
		})
}

// TestControllerBudgetsHoldAtStart: a Controller started in the middle of an outage (a
// restart of the leader, or a new one) deletes nothing while the Brake's rule, or
// Confirm's, holds for it in the cluster: 6 of 10 nodes tainted unreachable 10 minutes
// ago, their pods tolerating it for 300 s. The informers' handlers are held back until
// their caches are filled, and the node handler until the pods have been handed to the
// Manager and decided (each against a node read from the informer's cache, which has them
// all); the Manager must let nothing through until the handlers have synced, and then hold
// the 6. When 2 nodes recover, the 4 others go.
func TestControllerBudgetsHoldAtStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts eviction.Options
	}{
		{"Brake", eviction.Options{Brake: eviction.Brake{Fraction: 0.5}}},
		{"Confirm", eviction.Options{Confirm: eviction.Confirm{Fraction: 0.5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
				clk := clocktesting.NewFakeClock(now)
				client, deletes := outageCluster(now)
				g := gated{pods: make(chan struct{}), nodes: make(chan struct{})}
				opts := tc.opts
				opts.Clock = clk
				c, err := NewController(t.Context(), client, g.factory(NewFactory(client)), Options{Manager: opts, EventClient: eventSink()})
				if err != nil {
					t.Fatal(err)
				}
				stop := startController(t, c)
				synctest.Wait() // the caches are filled; both handlers wait
				if got := len(c.Informers().Nodes.GetStore().ListKeys()); got != 10 {
					t.Fatalf("the node informer's cache has %d nodes, want 10", got)
				}
				close(g.pods)
				synctest.Wait() // the pods handed on and decided; the node handler waits
				if got := deletes.get(); len(got) != 0 {
					t.Errorf("before the node handler has run: deleted %v, want none", got)
				}
				close(g.nodes)
				<-c.Synced()
				synctest.Wait()
				clk.Step(time.Minute)
				synctest.Wait()
				if got := deletes.get(); len(got) != 0 {
					t.Errorf("once synced: deleted %v, want none while 6 of 10 nodes are tainted", got)
				}
				for _, name := range []string{"node-0", "node-1"} {
					if _, err := client.CoreV1().Nodes().Update(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				synctest.Wait()
				want := []string{"web-2", "web-3", "web-4", "web-5"}
				got := deletes.get()
				if tc.name == "Confirm" && slices.Contains(got, "web-1") {
					// Confirm lets go at 5 of 10 (no more than half), once node-0 is back: web-1,
					// whose node-1 is still tainted until its own update, may go then. The brake
					// resumes below the fraction only (at it, it stays as it was).
					want = []string{"web-1", "web-2", "web-3", "web-4", "web-5"}
				}
				if !slices.Equal(got, want) {
					t.Errorf("with 4 of 10 nodes tainted: deleted %v in all, want %v", got, want)
				}
				if err := stop(); err != nil {
					t.Errorf("Run: %v", err)
				}
			})
		})
	}
}

// TestControllerBudgetsHoldAtStartAsItComes: the same outage and Controller, its informers
// left to deliver the initial listing as they do, many times over: not one pod is deleted
// while the Brake's rule, or Confirm's, holds, whatever order the scheduler gives the
// informers' deliveries in each run.
func TestControllerBudgetsHoldAtStartAsItComes(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts eviction.Options
	}{
		{"Brake", eviction.Options{Brake: eviction.Brake{Fraction: 0.5}}},
		{"Confirm", eviction.Options{Confirm: eviction.Confirm{Fraction: 0.5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for run := range 20 {
				t.Run(fmt.Sprint("run ", run+1), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
						clk := clocktesting.NewFakeClock(now)
						client, deletes := outageCluster(now)
						opts := tc.opts
						opts.Clock = clk
						c, err := NewController(t.Context(), client, NewFactory(client), Options{Manager: opts, EventClient: eventSink()})
						if err != nil {
							t.Fatal(err)
						}
						stop := startController(t, c)
						<-c.Synced()
						synctest.Wait()
						clk.Step(time.Minute)
						synctest.Wait()
						if got := deletes.get(); len(got) != 0 {
							t.Errorf("deleted %v, want none while 6 of 10 nodes are tainted", got)
						}
						if err := stop(); err != nil {
							t.Errorf("Run: %v", err)
						}
					})
				})
			}
		})
	}
}
