package device

import (
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The cluster of kube's device taint controller tests (pkg/controller/devicetainteviction,
// v1.37.2), rebuilt for kube_test.go: one driver with a pool per node, a pod that uses one
// claim, the claim allocated one device (or two others), DeviceTaintRules that select by
// driver or by device. Names and UIDs are kube's, so that a case reads as kube's does.
const (
	kNS        = "default"
	kPod       = "my-pod"
	kPodUID    = "1234"
	kGroup     = "my-podgroup"
	kGroupUID  = "5678"
	kDriver    = "some-driver"
	kNode      = "worker"
	kNode2     = "worker-2"
	kClaim     = kPod + "-my-resource"
	kTaintKey  = "example.com/taint"
	kTaintVal  = "something"
	kTolerated = 3600 // kube's tolerationDuration, in seconds
)

// key is "namespace/name" of kube's pod in ns, or of name in kube's namespace.
func kKey(name string) string { return kNS + "/" + name }

// kTaint is kube's taint: NoExecute, the key and value above, added at the start.
func kTaint() resourcev1.DeviceTaint {
	return resourcev1.DeviceTaint{Key: kTaintKey, Value: kTaintVal, Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: at(0)}
}

// kSlice is the pool of node worker: device instance (untainted, the one kube's claim is
// allocated), instance-no-schedule (a NoSchedule taint) and instance-no-execute (taints of
// effect None and NoExecute, added at the start); edits change it.
func kSlice(edits ...func(*resourcev1.ResourceSlice)) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: kNode + "-" + kDriver},
		Spec: resourcev1.ResourceSliceSpec{Driver: kDriver, NodeName: ptrTo(kNode), Pool: resourcev1.ResourcePool{Name: kNode, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{
				{Name: "instance"},
				{Name: "instance-no-schedule", Taints: []resourcev1.DeviceTaint{{Key: kTaintKey, Effect: resourcev1.DeviceTaintEffectNoSchedule}}},
				{Name: "instance-no-execute", Taints: []resourcev1.DeviceTaint{
					{Key: kTaintKey, Effect: resourcev1.DeviceTaintEffectNone, TimeAdded: at(0)},
					{Key: kTaintKey, Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: at(0)}}},
			}},
	}
	for _, e := range edits {
		e(s)
	}
	return s
}

// Edits of kSlice.
func taintInstance(taints ...resourcev1.DeviceTaint) func(*resourcev1.ResourceSlice) {
	return func(s *resourcev1.ResourceSlice) { s.Spec.Devices[0].Taints = taints }
}

func untaintOthers(s *resourcev1.ResourceSlice) {
	s.Spec.Devices[1].Taints, s.Spec.Devices[2].Taints = nil, nil
}

func renameDevices(s *resourcev1.ResourceSlice) {
	for i := range s.Spec.Devices {
		s.Spec.Devices[i].Name += "-other"
	}
}

// setEffect gives every taint of the slice effect.
func setEffect(effect resourcev1.DeviceTaintEffect) func(*resourcev1.ResourceSlice) {
	return func(s *resourcev1.ResourceSlice) {
		for i := range s.Spec.Devices {
			for j := range s.Spec.Devices[i].Taints {
				s.Spec.Devices[i].Taints[j].Effect = effect
			}
		}
	}
}

// addTaintedCopy adds a copy of instance, named instance-other.
func addTaintedCopy(s *resourcev1.ResourceSlice) {
	d := *s.Spec.Devices[0].DeepCopy()
	d.Name += "-other"
	s.Spec.Devices = append(s.Spec.Devices, d)
}

// nextGeneration renames the slice and makes it the pool's newer generation, by n.
func nextGeneration(n int64, suffix string) func(*resourcev1.ResourceSlice) {
	return func(s *resourcev1.ResourceSlice) { s.Name += suffix; s.Spec.Pool.Generation += n }
}

// kSliceTainted is kSlice with kube's taint on instance.
func kSliceTainted(edits ...func(*resourcev1.ResourceSlice)) *resourcev1.ResourceSlice {
	return kSlice(append([]func(*resourcev1.ResourceSlice){taintInstance(kTaint())}, edits...)...)
}

// kSlice2 is kSlice for node worker-2, a generation up.
func kSlice2() *resourcev1.ResourceSlice {
	return kSlice(func(s *resourcev1.ResourceSlice) {
		s.Name += "-2"
		s.Spec.NodeName, s.Spec.Pool.Name = ptrTo(kNode2), kNode2
		s.Spec.Pool.Generation++
	})
}

// kClaimObj is the claim name of namespace ns, with one request, not allocated.
func kClaimObj(ns, name string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "req-1",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "my-resource-class", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}}}}}
}

// owner makes the controller of the claim a pod (kind Pod) or a PodGroup (kind PodGroup).
func owner(c *resourcev1.ResourceClaim, kind, name, uid string) *resourcev1.ResourceClaim {
	apiVersion := "v1"
	if kind == "PodGroup" {
		apiVersion = "scheduling.k8s.io/v1beta1"
	}
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptrTo(true)}}
	return c
}

// allocate allocates the claim the devices of pool worker, with tolerations on the first.
func allocate(c *resourcev1.ResourceClaim, devices []string, tols ...resourcev1.DeviceToleration) *resourcev1.ResourceClaim {
	c.Status.Allocation = &resourcev1.AllocationResult{}
	for i, d := range devices {
		r := resourcev1.DeviceRequestAllocationResult{Driver: kDriver, Pool: kNode, Device: d, Request: "req-1"}
		if i == 0 {
			r.Tolerations = tols
		}
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, r)
	}
	return c
}

// reserve reserves the claim for consumers: pods "name:uid", or the PodGroup "group:name:uid".
func reserve(c *resourcev1.ResourceClaim, consumers ...resourcev1.ResourceClaimConsumerReference) *resourcev1.ResourceClaim {
	c.Status.ReservedFor = consumers
	return c
}

func podRef(name, uid string) resourcev1.ResourceClaimConsumerReference {
	return resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: name, UID: types.UID(uid)}
}

func groupRef() resourcev1.ResourceClaimConsumerReference {
	return resourcev1.ResourceClaimConsumerReference{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: kGroup, UID: kGroupUID}
}

var otherDevices = []string{"instance-no-schedule", "instance-no-execute"}

// kInUse is kube's inUseClaim: made for kube's pod, allocated instance with tols, reserved
// for the pod.
func kInUse(tols ...resourcev1.DeviceToleration) *resourcev1.ResourceClaim {
	return reserve(allocate(owner(kClaimObj(kNS, kClaim), "Pod", kPod, kPodUID), []string{"instance"}, tols...), podRef(kPod, kPodUID))
}

// kInUseByGroup is kInUse made for and reserved for kube's PodGroup.
func kInUseByGroup() *resourcev1.ResourceClaim {
	return reserve(allocate(owner(kClaimObj(kNS, kClaim), "PodGroup", kGroup, kGroupUID), []string{"instance"}), groupRef())
}

// kInUseOld is kInUse made for another pod of the same name (its UID), with a UID of its own.
func kInUseOld() *resourcev1.ResourceClaim {
	c := kInUse()
	c.UID = "other"
	return owner(c, "Pod", kPod, kPodUID+"-other")
}

// kInUseOtherNS is the claim of kube's pod of namespace default-other, on the other devices.
func kInUseOtherNS() *resourcev1.ResourceClaim {
	return reserve(allocate(owner(kClaimObj(kNS+"-other", kClaim), "Pod", kPod, kPodUID+"-2"), otherDevices), podRef(kPod, kPodUID+"-2"))
}

// kInUseOtherName is the claim of pod my-pod-other, on the other devices; shared, it is
// reserved for kube's pod too.
func kInUseOtherName(shared bool) *resourcev1.ResourceClaim {
	c := allocate(owner(kClaimObj(kNS, kClaim+"-other"), "Pod", kPod+"-other", kPodUID+"-3"), otherDevices)
	if shared {
		return reserve(c, podRef(kPod, kPodUID), podRef(kPod+"-other", kPodUID+"-3"))
	}
	return reserve(c, podRef(kPod+"-other", kPodUID+"-3"))
}

// tolerateFor tolerates key (all keys if empty) with op for seconds (forever if negative).
func tolerateFor(key string, op resourcev1.DeviceTolerationOperator, value string, seconds int64) resourcev1.DeviceToleration {
	t := resourcev1.DeviceToleration{Key: key, Operator: op, Value: value, Effect: resourcev1.DeviceTaintEffectNoExecute}
	if seconds >= 0 {
		t.TolerationSeconds = &seconds
	}
	return t
}

// kTolerating is kube's tolerating toleration: kube's taint, by value, for an hour.
func kTolerating() resourcev1.DeviceToleration {
	return tolerateFor(kTaintKey, resourcev1.DeviceTolerationOpEqual, kTaintVal, kTolerated)
}

// kPodObj is pod name of namespace ns with uid on node worker (none if node is empty),
// using the claims as they are named: by name (kube's ResourceClaimName) unless edits
// change that.
func kPodObj(ns, name, uid, node string, claims ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "i"}}}}
	for i, c := range claims {
		n := "my-resource"
		if i > 0 {
			n += "-other"
		}
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: n, ResourceClaimName: ptrTo(c)})
	}
	return p
}

// kPodWithClaim is kube's podWithClaimName.
func kPodWithClaim() *v1.Pod { return kPodObj(kNS, kPod, kPodUID, kNode, kClaim) }

// kPodFromTemplate is kube's podWithClaimTemplate: the claim from a template; inStatus
// names the claim made for it in its status (nil: that none was made), with status.
func kPodFromTemplate(status bool, claim *string) *v1.Pod {
	p := kPodObj(kNS, kPod, kPodUID, kNode)
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "my-resource", ResourceClaimTemplateName: ptrTo(kClaim)}}
	if status {
		p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "my-resource", ResourceClaimName: claim}}
	}
	return p
}

// kPodExtended is kube's podWithExtendedResourceClaimInStatus.
func kPodExtended() *v1.Pod {
	p := kPodObj(kNS, kPod, kPodUID, kNode)
	p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: kClaim}
	return p
}

// inKGroup puts the pod in kube's PodGroup.
func inKGroup(p *v1.Pod) *v1.Pod {
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptrTo(kGroup)}
	return p
}

// kRule is the DeviceTaintRule name with uid, kube's taint with effect, added at +added,
// selecting the devices of sel.
func kRule(name, uid string, sel *resourcev1.DeviceTaintSelector, effect resourcev1.DeviceTaintEffect, added int) *resourcev1.DeviceTaintRule {
	t := kTaint()
	t.Effect, t.TimeAdded = effect, at(secs(added))
	return &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)},
		Spec: resourcev1.DeviceTaintRuleSpec{DeviceSelector: sel, Taint: t}}
}

func byDriver() *resourcev1.DeviceTaintSelector {
	return &resourcev1.DeviceTaintSelector{Driver: ptrTo(kDriver)}
}

func byDevice(d string) *resourcev1.DeviceTaintSelector {
	return &resourcev1.DeviceTaintSelector{Driver: ptrTo(kDriver), Device: ptrTo(d)}
}

// kube's rules: evict (every device of the driver), evict-instance and
// evict-instance-no-execute (added 40 s later), evict-other (device instance of any driver),
// and the same as evict with effect None.
func kRuleEvict() *resourcev1.DeviceTaintRule {
	return kRule("evict", "1234", byDriver(), resourcev1.DeviceTaintEffectNoExecute, 0)
}

func kRuleNone() *resourcev1.DeviceTaintRule {
	return kRule("evict", "1234", byDriver(), resourcev1.DeviceTaintEffectNone, 0)
}

func kRuleInstance1() *resourcev1.DeviceTaintRule {
	return kRule("evict-instance", "1234", byDevice("instance"), resourcev1.DeviceTaintEffectNoExecute, 0)
}

func kRuleInstance2Later() *resourcev1.DeviceTaintRule {
	return kRule("evict-instance-no-execute", "5678", byDevice("instance-no-execute"), resourcev1.DeviceTaintEffectNoExecute, 40)
}

func kRuleOther() *resourcev1.DeviceTaintRule {
	return kRule("evict-other", "1234-other", &resourcev1.DeviceTaintSelector{Device: ptrTo("instance")}, resourcev1.DeviceTaintEffectNoExecute, 0)
}

func secs(n int) time.Duration { return time.Duration(n) * time.Second }
