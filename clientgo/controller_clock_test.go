package clientgo

import (
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
)

// TestControllerOneClock: Options.Manager.Clock is the Controller's one clock. On a fake
// clock set in 2030 (the bubble's own clock is in 2000), the deadline counts on it (the pod
// tolerates the taint for a minute and goes when the fake clock has moved a minute), and so
// do the DisruptionTarget condition's lastTransitionTime, the Event's timestamps and the
// Reachability's outage, which has no clock of its own.
func TestControllerOneClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fakeNow := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
		clk := clocktesting.NewFakeClock(fakeNow)
		minute := int64(60)
		client := fake.NewClientset(taintedNode("node-1", fakeNow), tolerating(podOn("shop", "web-1", "node-1"), &minute))
		var marked *v1.Pod
		client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			if obj, err := client.Tracker().Get(podsGVR, "shop", "web-1"); err == nil {
				marked = obj.(*v1.Pod)
			}
			return false, nil, nil
		})
		r, err := NewReachability(ReachabilityOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewController(t.Context(), client, NewFactory(client), Options{Manager: eviction.Options{Clock: clk}, Reachability: r})
		if err != nil {
			t.Fatal(err)
		}
		stop := startController(t, c)
		<-c.Synced()
		time.Sleep(time.Hour) // the bubble's clock: nothing is due on it
		synctest.Wait()
		if marked != nil {
			t.Fatal("web-1 deleted before the fake clock moved")
		}
		clk.Step(time.Minute)
		synctest.Wait()
		if marked == nil {
			t.Fatal("web-1 not deleted once the fake clock moved a minute")
		}
		var ltt time.Time
		for _, cond := range marked.Status.Conditions {
			if cond.Type == v1.DisruptionTarget {
				ltt = cond.LastTransitionTime.Time
			}
		}
		if want := fakeNow.Add(time.Minute); !ltt.Equal(want) {
			t.Errorf("the condition's lastTransitionTime: got %v, want the fake clock's %v", ltt, want)
		}
		events, err := client.CoreV1().Events("shop").List(t.Context(), metav1.ListOptions{})
		if err != nil || len(events.Items) != 1 {
			t.Fatalf("got Events %v (%v), want one", events, err)
		}
		if got, want := events.Items[0].FirstTimestamp.Time, fakeNow.Add(time.Minute); !got.Equal(want) {
			t.Errorf("the Event's timestamp: got %v, want the fake clock's %v", got, want)
		}

		req, _ := http.NewRequest("GET", "https://api/version", nil)
		refused := &url.Error{Op: "Get", URL: "https://api/version", Err: syscall.ECONNREFUSED}
		_, _ = r.Wrap(reachRoundTrip(func(*http.Request) (*http.Response, error) { return nil, refused })).RoundTrip(req)
		synctest.Wait()
		clk.Step(3 * time.Second)
		if err := c.Ready(); err == nil || !strings.Contains(err.Error(), "for 3s (since 2030-01-01T10:01:00Z)") {
			t.Errorf("Ready while the server does not answer: got %v, want it dated on the fake clock", err)
		}
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
