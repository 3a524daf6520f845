package compat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/devicetainteviction"

	"github.com/taintevict/taintevict/clientgo/device"
)

// The device side's compatibility table: kube's device taint eviction controller
// (devicetainteviction.New, k8s.io/kubernetes v1.37.2) and taintevict's
// (clientgo/device.Controller), each on a fake clientset of its own inside a synctest
// bubble, so that both run on the bubble's clock, as kube's own tests do: a DELETE's time
// is exact, and so is the comparison.

// devOutcome is what happens to a pod: its first DELETE at, since the start, or never.
type devOutcome struct {
	at    time.Duration
	never bool
}

func deleted(at time.Duration) devOutcome { return devOutcome{at: at} }

var kept = devOutcome{never: true}

func (o devOutcome) String() string {
	if o.never {
		return "never deleted"
	}
	return fmt.Sprintf("deleted at +%v", o.at)
}

// devStep changes the cluster at, since the start, through the clientset.
type devStep struct {
	at time.Duration
	do func(ctx context.Context, c *fake.Clientset) error
}

// devDifference is an expected difference, a listed kube bug: each side's own outcome for
// the pod.
type devDifference struct {
	pod, issue       string
	kube, taintevict devOutcome
}

type devScenario struct {
	// name is the case of kube's test it ports ("TestController/..." where not said).
	name    string
	objects []runtime.Object
	steps   []devStep
	want    map[string]devOutcome
	diff    *devDifference
	// failFirst makes the first request about a pod (kube's GET, taintevict's status
	// PATCH) fail with a 500, and slack is then how late the retried DELETE may come;
	// vanish makes someone else delete the pod right before that request.
	failFirst, vanish bool
	slack             time.Duration
}

func (s devScenario) expected(impl string) map[string]devOutcome {
	want := map[string]devOutcome{}
	for k, v := range s.want {
		want[k] = v
	}
	if s.diff != nil {
		want[s.diff.pod] = map[string]devOutcome{"kube": s.diff.kube, "taintevict": s.diff.taintevict}[impl]
	}
	return want
}

// TestDeviceSameOutcomes plays every device scenario against both controllers and checks
// each pod's outcome, to the nanosecond of the bubble's clock (within slack after a
// failure).
func TestDeviceSameOutcomes(t *testing.T) {
	for _, s := range deviceScenarios {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			for _, impl := range []string{"kube", "taintevict"} {
				t.Run(impl, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) { playDevice(t, s, impl) })
				})
			}
		})
	}
}

// playDevice runs s against impl in the current bubble and checks the outcomes.
func playDevice(t *testing.T, s devScenario, impl string) {
	start := time.Now()
	client := fake.NewClientset(s.objects...)
	var mu sync.Mutex
	deletes := map[string]time.Duration{}
	failed := false
	client.PrependReactor("*", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		verb := a.GetVerb()
		if (s.failFirst || s.vanish) && !failed && (verb == "get" || verb == "patch") {
			failed = true
			if s.vanish {
				name := a.(interface{ GetName() string }).GetName()
				if err := client.Tracker().Delete(a.GetResource(), a.GetNamespace(), name); err != nil {
					return true, nil, err
				}
				return true, nil, apierrors.NewNotFound(v1.Resource("pods"), name)
			}
			return true, nil, apierrors.NewInternalError(errors.New("compat: injected failure"))
		}
		if verb == "delete" {
			key := a.GetNamespace() + "/" + a.(clienttesting.DeleteAction).GetName()
			if _, ok := deletes[key]; !ok {
				deletes[key] = time.Since(start)
			}
		}
		return false, nil, nil
	})
	stop := runDevice(t, impl, client)
	for _, st := range s.steps {
		time.Sleep(st.at - time.Since(start))
		if err := st.do(t.Context(), client); err != nil {
			t.Fatalf("step at +%v: %v", st.at, err)
		}
		synctest.Wait()
	}
	time.Sleep(2*time.Hour - time.Since(start)) // every deadline of the table is within the hour
	synctest.Wait()
	stop()
	want := s.expected(impl)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range want {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		d, ok := deletes[name]
		got := kept
		if ok {
			got = deleted(d)
		}
		w := want[name]
		if got.never != w.never || !w.never && (got.at < w.at || got.at > w.at+s.slack) {
			t.Errorf("%s: got %v, want %v", name, got, w)
		}
	}
}

// runDevice starts the controller impl on client, waits until it has synced, and returns
// the function that stops it and waits for it.
func runDevice(t *testing.T, impl string, client *fake.Clientset) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logr.Discard()))
	factory := informers.NewSharedInformerFactory(client, 0)
	var run func(ctx context.Context) error
	switch impl {
	case "kube":
		r := factory.Resource().V1()
		tc := devicetainteviction.New(client, factory.Core().V1().Pods(), r.ResourceClaims(), r.ResourceSlices(), r.DeviceTaintRules(), r.DeviceClasses(), device.Component)
		run = func(ctx context.Context) error { return tc.Run(ctx, 10) }
	case "taintevict":
		c, err := device.NewController(ctx, client, factory, device.Options{})
		if err != nil {
			t.Fatal(err)
		}
		run = c.Run
	}
	// Both sides evict only from synced caches, and both check with client-go's 100 ms
	// poll, whose first check is at once: the informers list the cluster before Run, so
	// that neither side's first eviction waits for a poll.
	factory.Start(ctx.Done())
	synctest.Wait()
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	synctest.Wait()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: Run: %v", impl, err)
		}
		factory.Shutdown()
	}
}

// The steps of the scenarios, through the clientset.

func createAt(at time.Duration, objs ...runtime.Object) devStep {
	return devStep{at, func(ctx context.Context, c *fake.Clientset) error {
		for _, o := range objs {
			if err := c.Tracker().Create(gvr(o), o, namespaceOf(o)); err != nil {
				return err
			}
		}
		return nil
	}}
}

func updateAt(at time.Duration, objs ...runtime.Object) devStep {
	return devStep{at, func(ctx context.Context, c *fake.Clientset) error {
		for _, o := range objs {
			if err := c.Tracker().Update(gvr(o), o, namespaceOf(o)); err != nil {
				return err
			}
		}
		return nil
	}}
}

func deleteAt(at time.Duration, objs ...runtime.Object) devStep {
	return devStep{at, func(ctx context.Context, c *fake.Clientset) error {
		for _, o := range objs {
			m := o.(interface{ GetName() string })
			if err := c.Tracker().Delete(gvr(o), namespaceOf(o), m.GetName()); err != nil {
				return err
			}
		}
		return nil
	}}
}

// gvr is the resource of o; the zero one, which the tracker refuses, for another type.
func gvr(o runtime.Object) schema.GroupVersionResource {
	switch o.(type) {
	case *v1.Pod:
		return v1.SchemeGroupVersion.WithResource("pods")
	case *resourcev1.ResourceClaim:
		return resourcev1.SchemeGroupVersion.WithResource("resourceclaims")
	case *resourcev1.ResourceSlice:
		return resourcev1.SchemeGroupVersion.WithResource("resourceslices")
	case *resourcev1.DeviceTaintRule:
		return resourcev1.SchemeGroupVersion.WithResource("devicetaintrules")
	}
	return schema.GroupVersionResource{}
}

func namespaceOf(o runtime.Object) string {
	return o.(interface{ GetNamespace() string }).GetNamespace()
}
