package clientgo

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/eviction"
)

// TestControllerEventClient: with Options.EventClient, the Events go through that client
// and no other, and an Event write that hangs delays no eviction: all 50 pods are deleted
// while the first Event still waits for the server. Once the server answers, every Event
// arrives, in the order of the evictions.
func TestControllerEventClient(t *testing.T) {
	const n = 50
	objs := []runtime.Object{taintedNode("node-1", time.Now().Add(-time.Minute))}
	for i := range n {
		objs = append(objs, podOn("shop", fmt.Sprintf("web-%02d", i), "node-1"))
	}
	client := fake.NewClientset(objs...)
	events := fake.NewClientset()
	release := make(chan struct{})
	created := make(chan string, n)
	events.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		<-release
		ev := a.(k8stesting.CreateAction).GetObject().(*v1.Event)
		created <- ev.Message
		return true, ev, nil
	})
	w := newWaiter()
	c, err := NewController(t.Context(), client, NewFactory(client), Options{
		EventClient: events, Observers: []eviction.Observer{w},
		Manager: eviction.Options{ActWorkers: 1}, // the evictions in one order, that of the Events
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := startController(t, c)
	w.until(t, "every pod deleted", func() bool {
		list, err := client.CoreV1().Pods("shop").List(t.Context(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 0
	})
	if got, want := c.Events(), (EventCounts{Queued: n - 1}); got != want {
		t.Errorf("Events while the first write hangs: got %+v, want %+v", got, want)
	}
	close(release)
	var got []string
	timeout := time.NewTimer(failAfter)
	defer timeout.Stop()
	for len(got) < n {
		select {
		case m := <-created:
			got = append(got, m)
		case <-timeout.C:
			t.Fatalf("got %d Events after %s, want %d", len(got), failAfter, n)
		}
	}
	// The order of the Events is the order of the deletions.
	var want []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			want = append(want, "Marking for deletion Pod shop/"+a.(k8stesting.DeleteAction).GetName())
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Events: got %v, want %v", got, want)
	}
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "events" {
			t.Errorf("the controller's client wrote an Event: %v", a)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Events(), (EventCounts{Written: n}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := client.CoreV1().Pods("shop").Get(t.Context(), "web-00", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("web-00: got %v, want NotFound", err)
	}
}
