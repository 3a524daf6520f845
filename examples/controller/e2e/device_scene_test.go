package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// The device side's condition and Event, as kube's device taint eviction controller
// writes them.
const (
	deviceReason      = "DeletionByDeviceTaintManager"
	deviceMessage     = "Device Taint manager: deleting due to NoExecute taint"
	deviceEventReason = "DeviceTaintManagerEviction"
)

// deviceScene is a scene with DRA devices: a driver of its own (so that no other
// scenario's slices or rules select its devices), one pool of devices in a ResourceSlice
// that the scene owns, and the DeviceTaintRules it made. No scheduler or driver runs: the
// scene writes each claim's allocation and reservation itself. Its cleanup removes the
// slice, the rules and the claims.
type deviceScene struct {
	*scene
	driver  string
	devices []string
	taints  map[string][]resourcev1.DeviceTaint // device -> the slice's taints
	rules   []string
	slice   string
}

func newDeviceScene(t *testing.T, devices ...string) *deviceScene {
	t.Helper()
	s := &deviceScene{scene: newScene(t), devices: devices, taints: map[string][]resourcev1.DeviceTaint{}}
	s.driver = s.prefix + ".e2e.example.com"
	s.slice = s.prefix + "-slice"
	_, err := admin.ResourceV1().ResourceSlices().Create(s.ctx, s.sliceObject(), metav1.CreateOptions{})
	require.NoError(t, err, "creating the ResourceSlice")
	t.Cleanup(s.cleanupDevices)
	return s
}

func (s *deviceScene) sliceObject() *resourcev1.ResourceSlice {
	sl := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: s.slice},
		Spec: resourcev1.ResourceSliceSpec{Driver: s.driver, Pool: resourcev1.ResourcePool{Name: "pool", ResourceSliceCount: 1},
			AllNodes: ptr.To(true)},
	}
	for _, d := range s.devices {
		sl.Spec.Devices = append(sl.Spec.Devices, resourcev1.Device{Name: d, Taints: s.taints[d]})
	}
	return sl
}

func (s *deviceScene) cleanupDevices() {
	ctx := context.Background()
	for _, r := range s.rules {
		if err := admin.ResourceV1().DeviceTaintRules().Delete(ctx, r, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			s.t.Errorf("cleanup: deleting DeviceTaintRule %s: %v", r, err)
		}
	}
	if err := admin.ResourceV1().ResourceSlices().Delete(ctx, s.slice, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		s.t.Errorf("cleanup: deleting ResourceSlice %s: %v", s.slice, err)
	}
	if err := admin.ResourceV1().ResourceClaims(s.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		s.t.Errorf("cleanup: deleting the claims of %s: %v", s.ns, err)
	}
}

// id is the controller's name of the scene's device d.
func (s *deviceScene) id(d string) string { return s.driver + "/pool/" + d }

// taintDevice gives the device the NoExecute taint key in the slice, with TimeAdded now
// rounded down to the second (the API keeps seconds), and returns that time.
func (s *deviceScene) taintDevice(d, key string) time.Time {
	s.t.Helper()
	added := time.Now().Truncate(time.Second)
	s.taints[d] = append(s.taints[d], resourcev1.DeviceTaint{Key: key, Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{Time: added}})
	s.updateSlice()
	return added
}

func (s *deviceScene) updateSlice() {
	s.t.Helper()
	cur, err := admin.ResourceV1().ResourceSlices().Get(s.ctx, s.slice, metav1.GetOptions{})
	require.NoError(s.t, err)
	sl := s.sliceObject()
	sl.ResourceVersion = cur.ResourceVersion
	sl.Spec.Pool.Generation = cur.Spec.Pool.Generation
	_, err = admin.ResourceV1().ResourceSlices().Update(s.ctx, sl, metav1.UpdateOptions{})
	require.NoError(s.t, err, "updating the ResourceSlice")
}

// rule creates the DeviceTaintRule name with taint key and effect, TimeAdded now (to the
// second), selecting the scene's devices (all of them when devices is empty; sel, when
// not nil, instead), and returns TimeAdded.
func (s *deviceScene) rule(name, key string, effect resourcev1.DeviceTaintEffect, sel *resourcev1.DeviceTaintSelector, devices ...string) time.Time {
	s.t.Helper()
	if sel == nil {
		sel = &resourcev1.DeviceTaintSelector{Driver: ptr.To(s.driver)}
		if len(devices) == 1 {
			sel.Device = ptr.To(devices[0])
		}
	}
	added := time.Now().Truncate(time.Second)
	name = s.prefix + "-" + name
	_, err := admin.ResourceV1().DeviceTaintRules().Create(s.ctx, &resourcev1.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       resourcev1.DeviceTaintRuleSpec{DeviceSelector: sel, Taint: resourcev1.DeviceTaint{Key: key, Effect: effect, TimeAdded: &metav1.Time{Time: added}}},
	}, metav1.CreateOptions{})
	require.NoError(s.t, err, "creating DeviceTaintRule %s", name)
	s.rules = append(s.rules, name)
	return added
}

func (s *deviceScene) deleteRule(name string) {
	s.t.Helper()
	require.NoError(s.t, admin.ResourceV1().DeviceTaintRules().Delete(s.ctx, s.prefix+"-"+name, metav1.DeleteOptions{}))
}

// alloc is a device of the scene allocated to a claim, with the allocation's toleration of
// key for seconds (forever if nil); no toleration when key is empty.
type alloc struct {
	device, key string
	seconds     *int64
}

// claimFor creates the claim name, allocated the devices and reserved for the pod (by the
// pod's UID), as the scheduler would.
func (s *deviceScene) claimFor(name string, pod *v1.Pod, allocs ...alloc) {
	s.t.Helper()
	require.NoError(s.t, s.allocate(name, pod, allocs...))
}

// allocate is claimFor for any goroutine: it returns its failure.
func (s *deviceScene) allocate(name string, pod *v1.Pod, allocs ...alloc) error {
	return s.allocateFor(name, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID}, allocs...)
}

// allocateFor creates the claim name, allocated the devices and reserved for consumer.
func (s *deviceScene) allocateFor(name string, consumer resourcev1.ResourceClaimConsumerReference, allocs ...alloc) error {
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}}
	for i := range allocs {
		claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, resourcev1.DeviceRequest{
			Name: fmt.Sprint("r", i), Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "e2e"}})
	}
	claim, err := admin.ResourceV1().ResourceClaims(s.ns).Create(s.ctx, claim, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating claim %s: %w", name, err)
	}
	claim.Status.Allocation = &resourcev1.AllocationResult{}
	for i, a := range allocs {
		r := resourcev1.DeviceRequestAllocationResult{Request: fmt.Sprint("r", i), Driver: s.driver, Pool: "pool", Device: a.device}
		if a.key != "" {
			r.Tolerations = []resourcev1.DeviceToleration{{Key: a.key, Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: a.seconds}}
		}
		claim.Status.Allocation.Devices.Results = append(claim.Status.Allocation.Devices.Results, r)
	}
	claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{consumer}
	if _, err = admin.ResourceV1().ResourceClaims(s.ns).UpdateStatus(s.ctx, claim, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("allocating claim %s: %w", name, err)
	}
	return nil
}

// devicePod creates the pod name on a node (no kubelet runs), using the claims by name.
func (s *deviceScene) devicePod(name string, claims ...string) *v1.Pod {
	s.t.Helper()
	p := newPod(s.ns, name, s.prefix+"-node")
	for _, c := range claims {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: c, ResourceClaimName: ptr.To(c)})
	}
	pod, err := admin.CoreV1().Pods(s.ns).Create(s.ctx, p, metav1.CreateOptions{})
	require.NoError(s.t, err, "creating pod %s", name)
	return pod
}

// podOnDevices creates the pod name and its claim name+"-claim" allocated allocs.
func (s *deviceScene) podOnDevices(name string, allocs ...alloc) *v1.Pod {
	s.t.Helper()
	pod := s.devicePod(name, name+"-claim")
	s.claimFor(name+"-claim", pod, allocs...)
	return pod
}

// assertDeviceEvicted checks what kube's device controller leaves on a pod it evicted: the
// condition DisruptionTarget=True with its reason and message, and its Event.
func (s *deviceScene) assertDeviceEvicted(pod *v1.Pod) {
	s.t.Helper()
	c := condition(pod, v1.DisruptionTarget)
	if assert.NotNil(s.t, c, "DisruptionTarget condition on the deleted pod %s", pod.Name) {
		assert.Equal(s.t, v1.ConditionTrue, c.Status)
		assert.Equal(s.t, deviceReason, c.Reason)
		assert.Equal(s.t, deviceMessage, c.Message)
	}
	e := s.waitDeviceEvent(pod, "Marking for deletion")
	assert.Equal(s.t, v1.EventTypeNormal, e.Type)
	assert.Equal(s.t, "device-taint-eviction-controller", e.Source.Component)
}

// waitDeviceEvent polls the pod's Events until one with the device controller's reason has
// the message msg, and returns it.
func (s *deviceScene) waitDeviceEvent(pod *v1.Pod, msg string) v1.Event {
	s.t.Helper()
	var found v1.Event
	sel := fields.Set{"involvedObject.name": pod.Name, "involvedObject.uid": string(pod.UID), "reason": deviceEventReason}.String()
	err := wait.PollUntilContextTimeout(s.ctx, 100*time.Millisecond, failAfter, true, func(ctx context.Context) (bool, error) {
		list, err := admin.CoreV1().Events(s.ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false, err
		}
		i := slices.IndexFunc(list.Items, func(e v1.Event) bool { return strings.HasPrefix(e.Message, msg) })
		if i >= 0 {
			found = list.Items[i]
		}
		return i >= 0, nil
	})
	require.NoError(s.t, err, "no %s Event %q on pod %s/%s", deviceEventReason, msg, pod.Namespace, pod.Name)
	return found
}

// ruleCondition polls the rule's EvictionInProgress condition until cond holds, and
// returns it.
func (s *deviceScene) ruleCondition(name string, cond func(metav1.Condition) bool) metav1.Condition {
	s.t.Helper()
	var got metav1.Condition
	err := wait.PollUntilContextTimeout(s.ctx, 100*time.Millisecond, failAfter, true, func(ctx context.Context) (bool, error) {
		r, err := admin.ResourceV1().DeviceTaintRules().Get(ctx, s.prefix+"-"+name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range r.Status.Conditions {
			if c.Type == resourcev1.DeviceTaintConditionEvictionInProgress {
				got = c
				return cond(c), nil
			}
		}
		return false, nil
	})
	require.NoError(s.t, err, "rule %s: the condition is %+v", name, got)
	return got
}

// deviceArgs are the device controller's arguments.
var deviceArgs = []string{"-controllers=device"}

// outageKey is the key of the device taint of the control plane's fault scenarios.
const outageKey = "outage"

// faultDevicePods creates n pods named p-I, each using a claim of its own allocated the
// device d-I (in no slice: a rule taints it), tolerating outageKey for tol(i) seconds (nil:
// not at all). It returns the pods by name with their toleration.
func (s *deviceScene) faultDevicePods(n int, tol func(i int) *int64) map[string]*int64 {
	s.t.Helper()
	pods := map[string]*int64{}
	var g errgroup.Group
	g.SetLimit(20)
	for i := range n {
		name := fmt.Sprintf("p-%03d", i)
		seconds := tol(i)
		pods[name] = seconds
		a := alloc{device: fmt.Sprint("d-", i)}
		if seconds != nil {
			a.key, a.seconds = outageKey, seconds
		}
		g.Go(func() error { return s.createPodOnDevices(name, a) })
	}
	if err := g.Wait(); err != nil {
		s.t.Fatalf("creating the pods: %v", err)
	}
	return pods
}

// keptDevicePods creates n pods named forever-I, each using the device f-I and tolerating
// outageKey forever, and returns their names: no fault may get them evicted.
func (s *deviceScene) keptDevicePods(n int) []string {
	s.t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprint("forever-", i)
		if err := s.createPodOnDevices(name, alloc{device: fmt.Sprint("f-", i), key: outageKey}); err != nil {
			s.t.Fatal(err)
		}
		names = append(names, name)
	}
	return names
}

// createPodOnDevices is podOnDevices for any goroutine: it returns its failure.
func (s *deviceScene) createPodOnDevices(name string, allocs ...alloc) error {
	p := newPod(s.ns, name, s.prefix+"-node")
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "c", ResourceClaimName: ptr.To(name + "-claim")}}
	pod, err := admin.CoreV1().Pods(s.ns).Create(s.ctx, p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating pod %s: %w", name, err)
	}
	return s.allocate(name+"-claim", pod, allocs...)
}
