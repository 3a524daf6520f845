package compat

import (
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The objects of kube's device_taint_eviction_test.go, written anew with the same names and
// meaning: a driver's pool "worker" of three devices (instance, instance-no-schedule,
// instance-no-execute), a second pool, the claim my-pod-my-resource of pod my-pod, rules.
// Every taint is added at the start of the synctest bubble, 2000-01-01 00:00:00 UTC, kube's
// taintTime too.

const (
	kDriver    = "some-driver"
	kNode      = "worker"
	kNode2     = "worker-2"
	kPod       = "my-pod"
	kPodUID    = "1234"
	kClaim     = "my-pod-my-resource"
	kNamespace = "default"
	kTaintKey  = "example.com/taint"
	kValue     = "something"
)

var kTaintTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func kTime(d time.Duration) *metav1.Time { return &metav1.Time{Time: kTaintTime.Add(d)} }

func dtaint(key, value string, effect resourcev1.DeviceTaintEffect) resourcev1.DeviceTaint {
	return resourcev1.DeviceTaint{Key: key, Value: value, Effect: effect, TimeAdded: kTime(0)}
}

// kTaint is kube's taint: example.com/taint=something:NoExecute.
var kTaint = dtaint(kTaintKey, kValue, resourcev1.DeviceTaintEffectNoExecute)

// kSlice is kube's slice of pool worker: instance untainted, instance-no-schedule with a
// NoSchedule taint, instance-no-execute with a None and a NoExecute one; change edits a
// copy.
func kSlice(change func(*resourcev1.ResourceSlice)) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: kNode + "-" + kDriver},
		Spec: resourcev1.ResourceSliceSpec{Driver: kDriver, NodeName: new(kNode), Pool: resourcev1.ResourcePool{Name: kNode, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{
				{Name: "instance"},
				{Name: "instance-no-schedule", Taints: []resourcev1.DeviceTaint{{Key: kTaintKey, Effect: resourcev1.DeviceTaintEffectNoSchedule}}},
				{Name: "instance-no-execute", Taints: []resourcev1.DeviceTaint{
					dtaint(kTaintKey, "", resourcev1.DeviceTaintEffectNone), dtaint(kTaintKey, "", resourcev1.DeviceTaintEffectNoExecute)}},
			}},
	}
	if change != nil {
		change(s)
	}
	return s
}

// The slices of kube's test, by its names.
func sliceUntaintedInstance() *resourcev1.ResourceSlice { return kSlice(nil) }

func sliceTainted() *resourcev1.ResourceSlice {
	return kSlice(func(s *resourcev1.ResourceSlice) { s.Spec.Devices[0].Taints = []resourcev1.DeviceTaint{kTaint} })
}

func sliceTaintedWith(taints ...resourcev1.DeviceTaint) *resourcev1.ResourceSlice {
	return kSlice(func(s *resourcev1.ResourceSlice) { s.Spec.Devices[0].Taints = taints })
}

func sliceTaintedEffect(effect resourcev1.DeviceTaintEffect) *resourcev1.ResourceSlice {
	return kSlice(func(s *resourcev1.ResourceSlice) {
		s.Spec.Devices[0].Taints = []resourcev1.DeviceTaint{kTaint}
		for i := range s.Spec.Devices {
			for j := range s.Spec.Devices[i].Taints {
				s.Spec.Devices[i].Taints[j].Effect = effect
			}
		}
	})
}

func simpleSlice() *resourcev1.ResourceSlice {
	return kSlice(func(s *resourcev1.ResourceSlice) { s.Spec.Devices = s.Spec.Devices[:1] })
}

func slice2() *resourcev1.ResourceSlice {
	return kSlice(func(s *resourcev1.ResourceSlice) {
		s.Name += "-2"
		s.Spec.NodeName, s.Spec.Pool.Name, s.Spec.Pool.Generation = new(kNode2), kNode2, 1
	})
}

// result is an allocation result of the claims: device of pool worker, with tolerations.
func result(device string, tols ...resourcev1.DeviceToleration) resourcev1.DeviceRequestAllocationResult {
	return resourcev1.DeviceRequestAllocationResult{Request: "req-1", Driver: kDriver, Pool: kNode, Device: device, Tolerations: tols}
}

func dtol(key string, op resourcev1.DeviceTolerationOperator, value string, secs *int64) resourcev1.DeviceToleration {
	return resourcev1.DeviceToleration{Key: key, Operator: op, Value: value, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: secs}
}

// kClaimObj is a claim of namespace ns named name, made for (owned by) the pod ownerUID,
// allocated results (none: not allocated) and reserved for the pods name:uid of reserved.
func kClaimObj(ns, name, ownerUID string, results []resourcev1.DeviceRequestAllocationResult, reserved ...[2]string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("claim-" + name + "-" + ownerUID),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: kPod, UID: types.UID(ownerUID), Controller: new(true)}}}}
	if results != nil {
		c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: results}}
	}
	for _, r := range reserved {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: r[0], UID: types.UID(r[1])})
	}
	return c
}

var myPod = [2]string{kPod, kPodUID}

// inUseClaim is kube's: my-pod's claim, allocated instance (with tols), reserved for it.
func inUseClaim(tols ...resourcev1.DeviceToleration) *resourcev1.ResourceClaim {
	return kClaimObj(kNamespace, kClaim, kPodUID, []resourcev1.DeviceRequestAllocationResult{result("instance", tols...)}, myPod)
}

// unallocatedClaim is kube's claim: neither allocated nor reserved.
func unallocatedClaim() *resourcev1.ResourceClaim { return kClaimObj(kNamespace, kClaim, kPodUID, nil) }

// inUseClaimOld is made for another pod of the name my-pod, and has another UID.
func inUseClaimOld() *resourcev1.ResourceClaim {
	c := kClaimObj(kNamespace, kClaim, kPodUID+"-other", []resourcev1.DeviceRequestAllocationResult{result("instance")}, myPod)
	c.UID = "other"
	return c
}

// otherDevices are the devices of the claims of kube's other pods.
var otherDevices = []resourcev1.DeviceRequestAllocationResult{result("instance-no-schedule"), result("instance-no-execute")}

// toleration forever, or for secs seconds.
func secs(s int64) *int64 { return &s }

// kPodObj is a pod of namespace ns named name with uid, on node (unscheduled if ""),
// using the claims by name.
func kPodObj(ns, name, uid, node string, claims ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}, Spec: v1.PodSpec{NodeName: node}}
	for i, c := range claims {
		rn := "my-resource"
		if i > 0 {
			rn += "-other"
		}
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: rn, ResourceClaimName: new(c)})
	}
	return p
}

func podWithClaimName() *v1.Pod { return kPodObj(kNamespace, kPod, kPodUID, kNode, kClaim) }

// podWithClaimTemplate uses a claim made from a template; with the claim's name in its
// status (inStatus), or a status entry without a name, or none.
func podWithClaimTemplate(status string) *v1.Pod {
	p := kPodObj(kNamespace, kPod, kPodUID, kNode)
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "my-resource", ResourceClaimTemplateName: new(kClaim)}}
	switch status {
	case "inStatus":
		p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "my-resource", ResourceClaimName: new(kClaim)}}
	case "noClaim":
		p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "my-resource"}}
	}
	return p
}

// podWithExtendedClaim uses my-pod's claim as its extended-resource claim.
func podWithExtendedClaim() *v1.Pod {
	p := kPodObj(kNamespace, kPod, kPodUID, kNode)
	p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: kClaim}
	return p
}

// kRule is a DeviceTaintRule named name selecting sel with kube's taint, of effect and
// TimeAdded added after the start.
func kRule(name, uid string, sel *resourcev1.DeviceTaintSelector, effect resourcev1.DeviceTaintEffect, added time.Duration) *resourcev1.DeviceTaintRule {
	t := kTaint
	t.Effect, t.TimeAdded = effect, kTime(added)
	return &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Generation: 1},
		Spec: resourcev1.DeviceTaintRuleSpec{DeviceSelector: sel, Taint: t}}
}

func ruleEvict() *resourcev1.DeviceTaintRule {
	return kRule("evict", "1234", &resourcev1.DeviceTaintSelector{Driver: new(kDriver)}, resourcev1.DeviceTaintEffectNoExecute, 0)
}

func ruleNone() *resourcev1.DeviceTaintRule {
	return kRule("evict", "1234", &resourcev1.DeviceTaintSelector{Driver: new(kDriver)}, resourcev1.DeviceTaintEffectNone, 0)
}

func ruleEvictOther() *resourcev1.DeviceTaintRule {
	return kRule("evict-other", "1234-other", &resourcev1.DeviceTaintSelector{Device: new("instance")}, resourcev1.DeviceTaintEffectNoExecute, 0)
}

func ruleEvictInstance1() *resourcev1.DeviceTaintRule {
	return kRule("evict-instance", "1234", &resourcev1.DeviceTaintSelector{Driver: new(kDriver), Device: new("instance")}, resourcev1.DeviceTaintEffectNoExecute, 0)
}

func ruleEvictInstance2Later() *resourcev1.DeviceTaintRule {
	return kRule("evict-instance-no-execute", "5678", &resourcev1.DeviceTaintSelector{Driver: new(kDriver), Device: new("instance-no-execute")}, resourcev1.DeviceTaintEffectNoExecute, 40*time.Second)
}
