package device

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction/engine"
)

// rig is a Controller on a fake clientset, inside a synctest bubble: time is the bubble's,
// so time.Sleep moves every clock (the engine's, the informers', the status period's) and
// synctest.Wait returns once everything the last change set off is done.
type rig struct {
	t      *testing.T
	client *fake.Clientset
	c      *Controller
	stop   func()
	start  time.Time

	mu      sync.Mutex
	deletes map[string]time.Duration // pod name -> its first DELETE, since start
}

func newRig(t *testing.T, opts Options, objs ...runtime.Object) *rig {
	t.Helper()
	return newRigWith(t, nil, opts, objs...)
}

// newRigWith is newRig, with setup called on the clientset before the controller starts
// (for its discovery, or reactors of the test's own).
func newRigWith(t *testing.T, setup func(*fake.Clientset), opts Options, objs ...runtime.Object) *rig {
	t.Helper()
	r := &rig{t: t, client: fake.NewClientset(objs...), start: time.Now(), deletes: map[string]time.Duration{}}
	if setup != nil {
		setup(r.client)
	}
	note := func(name string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.deletes[name]; !ok {
			r.deletes[name] = time.Since(r.start)
		}
	}
	r.client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		note(a.(k8stesting.DeleteAction).GetName())
		return false, nil, nil // the tracker deletes it
	})
	r.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		note(ev.Name)
		return true, nil, r.client.Tracker().Delete(v1.SchemeGroupVersion.WithResource("pods"), ev.Namespace, ev.Name)
	})
	r.stop = r.run(opts)
	return r
}

// run starts a Controller with opts on the rig's clientset, waits until it has synced and
// is idle, and returns the function that stops it.
func (r *rig) run(opts Options) (stop func()) {
	r.t.Helper()
	factory := clientgo.NewFactory(r.client)
	c, err := NewController(r.t.Context(), r.client, factory, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.c = c
	stop = runInBackground(r.t, c.Run)
	<-c.Synced()
	synctest.Wait()
	return stop
}

// runInBackground calls run in a goroutine of its own until stop, or the end of the test,
// cancels its context, and fails the test if it returned an error.
func runInBackground(t *testing.T, run func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// deleted returns when the pod's DELETE came, since the rig started.
func (r *rig) deleted(name string) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.deletes[name]
	return d, ok
}

func (r *rig) create(obj runtime.Object) { r.write(obj, true) }

func (r *rig) update(obj runtime.Object) { r.write(obj, false) }

// write creates obj (create), or updates it, through the rig's clientset, and waits until
// everything it set off is done.
func (r *rig) write(obj runtime.Object, create bool) {
	r.t.Helper()
	var err error
	ctx := r.t.Context()
	switch o := obj.(type) {
	case *v1.Pod:
		err = write(ctx, r.client.CoreV1().Pods(o.Namespace), o, create)
	case *resourcev1.ResourceClaim:
		err = write(ctx, r.client.ResourceV1().ResourceClaims(o.Namespace), o, create)
	case *resourcev1.ResourceSlice:
		err = write(ctx, r.client.ResourceV1().ResourceSlices(), o, create)
	case *resourcev1.DeviceTaintRule:
		err = write(ctx, r.client.ResourceV1().DeviceTaintRules(), o, create)
	default:
		err = fmt.Errorf("cannot write a %T", obj)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	synctest.Wait()
}

// writer is a typed client's Create and Update.
type writer[T any] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
}

// write creates obj through c (create), or updates it.
func write[T any](ctx context.Context, c writer[T], obj T, create bool) error {
	var err error
	if create {
		_, err = c.Create(ctx, obj, metav1.CreateOptions{})
	} else {
		_, err = c.Update(ctx, obj, metav1.UpdateOptions{})
	}
	return err
}

func (r *rig) deleteRule(name string) {
	r.t.Helper()
	if err := r.client.ResourceV1().DeviceTaintRules().Delete(r.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		r.t.Fatal(err)
	}
	synctest.Wait()
}

// sleep lets d pass, and everything due by then happen.
func (r *rig) sleep(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// The objects of the tests: a driver with pools of devices, claims allocated one or more
// of them with tolerations, pods that use claims.
const driver = "gpu.example.com"

// t0 is when every synctest bubble starts.
var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(d).Truncate(time.Second))
	return &t
}

func noExecute(key string, added *metav1.Time) resourcev1.DeviceTaint {
	return resourcev1.DeviceTaint{Key: key, Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: added}
}

// slice returns the pool's slice of generation 1 with devices; name:taint... entries.
func slice(pool string, devices map[string][]resourcev1.DeviceTaint) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: pool + "-slice"},
		Spec:       resourcev1.ResourceSliceSpec{Driver: driver, Pool: resourcev1.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: 1}, NodeName: ptrTo("node-1")},
	}
	names := make([]string, 0, len(devices))
	for n := range devices {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: n, Taints: devices[n]})
	}
	return s
}

func ptrTo[T any](v T) *T { return &v }

// dev is an allocated device "pool/device" with the allocation's tolerations.
type dev struct {
	id   string
	tols []resourcev1.DeviceToleration
}

func tolerate(key string, secs int64) resourcev1.DeviceToleration {
	t := resourcev1.DeviceToleration{Key: key, Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute}
	if secs >= 0 {
		t.TolerationSeconds = &secs
	}
	return t
}

// claim returns the claim ns/name allocated devs and reserved for the pods (name:uid).
func claim(name string, devs []dev, reservedFor ...string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("claim-" + name)}}
	if devs != nil {
		c.Status.Allocation = &resourcev1.AllocationResult{}
		for i, d := range devs {
			pool, device, _ := strings.Cut(d.id, "/")
			c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourcev1.DeviceRequestAllocationResult{
				Request: fmt.Sprint("req-", i), Driver: driver, Pool: pool, Device: device, Tolerations: d.tols})
		}
	}
	for _, p := range reservedFor {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: p, UID: types.UID("uid-" + p)})
	}
	return c
}

// pod returns the pod ns/name on node-1 using the claims by name.
func pod(name string, claims ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "c", Image: "i"}}}}
	for _, c := range claims {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: c, ResourceClaimName: ptrTo(c)})
	}
	return p
}

func rule(name string, sel *resourcev1.DeviceTaintSelector, taint resourcev1.DeviceTaint) *resourcev1.DeviceTaintRule {
	return &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("rule-" + name), Generation: 1},
		Spec: resourcev1.DeviceTaintRuleSpec{DeviceSelector: sel, Taint: taint}}
}

// events returns the Events recorded for pods, as "pod: message".
func (r *rig) events() []string {
	r.t.Helper()
	return podEvents(r.t, r.client, "ns", func(e v1.Event) string { return e.InvolvedObject.Name })
}

// podEvents returns the Events of namespace ns ("": of all), as "pod: message" where name
// names the pod, sorted; each must be the device controller's, of type Normal, on the pod's
// UID ("uid-" and its name, or kube's UIDs in kube_test.go: not empty).
func podEvents(t *testing.T, client kubernetes.Interface, ns string, name func(v1.Event) string) []string {
	t.Helper()
	list, err := client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		uid := e.InvolvedObject.UID
		if e.Reason != EventReason || e.Source.Component != Component || e.Type != v1.EventTypeNormal ||
			uid == "" || strings.HasPrefix(string(uid), "uid-") && uid != types.UID("uid-"+e.InvolvedObject.Name) {
			t.Errorf("Event %+v: want reason %s, source %s, type Normal and the pod's UID", e, EventReason, Component)
		}
		out = append(out, name(e)+": "+e.Message)
	}
	slices.Sort(out)
	return out
}

// writes returns the controller's requests that changed something but Events, as "verb
// resource[/subresource] name". The test's own (creates and updates of objects, deletes of
// rules) are left out.
func (r *rig) writes() []string {
	var out []string
	for _, a := range r.client.Actions() {
		verb, res, sub := a.GetVerb(), a.GetResource().Resource, a.GetSubresource()
		switch {
		case verb == "get" || verb == "list" || verb == "watch" || res == "events":
			continue
		case (verb == "create" || verb == "update") && sub == "", verb == "delete" && res == "devicetaintrules":
			continue // the test's
		}
		var name string
		switch a := a.(type) {
		case k8stesting.CreateAction:
			name = a.GetObject().(metav1.Object).GetName()
		case interface{ GetName() string }:
			name = a.GetName()
		}
		if sub != "" {
			res += "/" + sub
		}
		out = append(out, verb+" "+res+" "+name)
	}
	return out
}

// condition returns the rule's EvictionInProgress condition, or the zero one.
func (r *rig) condition(name string) metav1.Condition {
	r.t.Helper()
	rule, err := r.client.ResourceV1().DeviceTaintRules().Get(r.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, c := range rule.Status.Conditions {
		if c.Type == resourcev1.DeviceTaintConditionEvictionInProgress {
			return c
		}
	}
	return metav1.Condition{}
}

func newFakeClient() *fake.Clientset { return fake.NewClientset() }

// recorder is an engine.Observer that keeps its reports, as "Kind pod detail".
type recorder struct {
	engine.NopObserver
	mu      sync.Mutex
	reports []string
}

func (o *recorder) add(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reports = append(o.reports, s)
}

func (o *recorder) got() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.reports)
}

func (o *recorder) count(kind string) int {
	n := 0
	for _, r := range o.got() {
		if strings.HasPrefix(r, kind+" ") {
			n++
		}
	}
	return n
}

func (o *recorder) Scheduled(t engine.Ref, at time.Time) {
	o.add("Scheduled " + t.Name + " " + at.Format(time.TimeOnly))
}
func (o *recorder) Cancelled(t engine.Ref, r engine.Reason) {
	o.add("Cancelled " + t.Name + " " + string(r))
}
func (o *recorder) Delayed(t engine.Ref, r engine.Reason) {
	o.add("Delayed " + t.Name + " " + string(r))
}
func (o *recorder) Succeeded(t engine.Ref, _ engine.Attempt, dry bool) {
	if dry {
		o.add("Succeeded " + t.Name + " dry run")
		return
	}
	o.add("Succeeded " + t.Name)
}
