package clientgo

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestHandoff: a Manager of one's own, fed through a Handoff on the real goroutines of a
// fake clientset's informers, with a fake clock. After each write of the test, WaitIdle
// returns once the Manager has been handed it and has done what is due: a pod that
// tolerates the taint for a minute is pending, then a pod deleted by the test is
// cancelled (its deletion reached the Manager), then a pod due at once is deleted (and its
// deletion came round).
func TestHandoff(t *testing.T) {
	clk := clocktesting.NewFakeClock(testNow)
	minute := int64(60)
	client := fake.NewClientset(taintedNode("node-1", testNow),
		tolerating(podOn("shop", "later", "node-1"), &minute), tolerating(podOn("shop", "deleted", "node-1"), &minute))
	factory := NewFactory(client)
	inf, err := NewInformers(factory)
	if err != nil {
		t.Fatal(err)
	}
	cache := NewInformerCache(inf)
	m, err := eviction.New(NewPodDeleter(client, PodDeleterOptions{Pods: cache, Clock: clk}), cache, eviction.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandoff(client, m) // before the informers start: the fake's watches
	if _, err := inf.AddHandlers(h, klog.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), failAfter)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	factory.Start(ctx.Done())
	defer factory.Shutdown()

	pending := func(want ...string) {
		t.Helper()
		if err := h.WaitIdle(ctx); err != nil {
			t.Fatalf("WaitIdle: %v", err)
		}
		var got []string
		for _, p := range m.Pending() {
			got = append(got, p.Target.Name)
		}
		if len(got) != len(want) || len(want) > 0 && !equalSets(got, want) {
			t.Errorf("pending after WaitIdle: got %v, want %v", got, want)
		}
	}
	pending("later", "deleted")
	if err := client.CoreV1().Pods("shop").Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pending("later")
	if _, err := client.CoreV1().Pods("shop").Create(ctx, podOn("shop", "now", "node-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pending("later")
	if _, err := client.CoreV1().Pods("shop").Get(ctx, "now", metav1.GetOptions{}); err == nil {
		t.Error("the pod due at once is still there after WaitIdle")
	}
	clk.Step(time.Minute)
	pending()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run: %v", err)
	}
}

func equalSets(a, b []string) bool {
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestHandoffWaits: WaitIdle does not return while the Manager has not been handed what
// the server holds (here no informer runs at all): it returns ctx's error when ctx ends;
// a Controller without Options.WaitIdle says that it needs it.
func TestHandoffWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset(podOn("shop", "web-1", "node-1"))
		m, err := eviction.New(nil, &evictiontest.Cache{}, eviction.Options{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		h := NewHandoff(client, m)
		h.unopened = nil // as if the watches were open
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := h.WaitIdle(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("WaitIdle with nothing handed: got %v, want %v", err, context.DeadlineExceeded)
		}
	})
	client := fake.NewClientset()
	c, err := NewController(t.Context(), client, NewFactory(client), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitIdle(t.Context()); !errors.Is(err, errNoHandoff) {
		t.Errorf("WaitIdle without Options.WaitIdle: got %v, want %v", err, errNoHandoff)
	}
}

// TestHandoffAfterTheInformers: a Handoff made on a fake clientset after the informers
// opened their watches cannot see them open; its WaitIdle says so at once, naming the
// mistake, where it used to wait until ctx ended. Made before, it waits and returns nil.
func TestHandoffAfterTheInformers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		late    bool
		wantErr string
	}{
		{name: "made before the informers start"},
		{name: "made after they opened their watches", late: true,
			wantErr: "clientgo: WaitIdle: the Handoff was created after the informers opened their watch of nodes and pods on the fake clientset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client := fake.NewClientset(podOn("shop", "web-1", "node-1"))
				m, err := eviction.New(nil, &evictiontest.Cache{}, eviction.Options{DryRun: true})
				if err != nil {
					t.Fatal(err)
				}
				factory := NewFactory(client)
				inf, err := NewInformers(factory)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				var h *Handoff
				if !tc.late {
					h = NewHandoff(client, m)
				}
				factory.StartWithContext(ctx)
				defer factory.Shutdown()
				if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
					t.Fatal(err)
				}
				if tc.late {
					h = NewHandoff(client, m)
				}
				if _, err := inf.AddHandlers(h, klog.Background()); err != nil {
					t.Fatal(err)
				}
				go func() { _ = m.Run(ctx) }()
				start := time.Now()
				err = h.WaitIdle(ctx)
				switch {
				case tc.wantErr == "" && err != nil:
					t.Errorf("WaitIdle: got %v, want nil", err)
				case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
					t.Errorf("WaitIdle: got %v, want an error starting %q", err, tc.wantErr)
				case tc.wantErr != "" && time.Since(start) != 0:
					t.Errorf("WaitIdle returned its error after %v, want at once", time.Since(start))
				}
				cancel()
			})
		})
	}
}

// TestHandoffDeletionBeforeTheWatch: a pod deleted after the pod informer's list and
// before its watch opened (the Manager evicts as the pods are listed) reaches the
// informer all the same, so WaitIdle returns. Before, the fake's watch did not replay the
// deletion, the informer kept the pod for ever, and WaitIdle waited until its ctx ended
// (a CI run hung in ExampleNewMeter).
func TestHandoffDeletionBeforeTheWatch(t *testing.T) {
	client := fake.NewClientset(taintedNode("node-1", testNow), podOn("shop", "gone", "node-1"))
	factory := NewFactory(client)
	inf, err := NewInformers(factory)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(testNow)
	cache := NewInformerCache(inf)
	m, err := eviction.New(NewPodDeleter(client, PodDeleterOptions{Pods: cache, Clock: clk}), cache, eviction.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandoff(client, m)
	if _, err := inf.AddHandlers(h, klog.Background()); err != nil {
		t.Fatal(err)
	}
	stale, err := client.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Pods("shop").Delete(t.Context(), "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The informer's list, the first, is the one taken before the deletion.
	var once sync.Once
	client.PrependReactor("list", "pods", func(k8stesting.Action) (handled bool, obj runtime.Object, err error) {
		once.Do(func() { handled, obj = true, stale.DeepCopy() })
		return handled, obj, nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), failAfter)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if err := h.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
	if _, ok, _ := inf.Pods.GetIndexer().GetByKey("shop/gone"); ok {
		t.Error("the informer still holds the pod deleted before its watch")
	}
	cancel()
	<-done
}
