package compat

import (
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

const sec = time.Second

// The scenarios of kube's device_taint_eviction_test.go (v1.37.2) that decide whether and
// when a pod is evicted, by the name of kube's case. Kube's TestController feeds its handlers
// objects and looks at its internal state; here each case's objects exist at the start
// ("initial state") or are created at +0 ("events"), and the outcome is the DELETE. Kube's
// cases whose initial state holds an eviction due at once but not yet carried out ("cancel-
// ...", "...-again", "...-unrelated-changes") cannot be reached by a running controller,
// which evicts at once: there the claim tolerates the taint for 60 s, the change comes at
// +10 s, and the outcome is at +60 s or never, which is the case's point.
//
// Left out, and why:
//   - empty, populate-pools, update-pools, untainted-claim, tainted-claim-through-
//     resourceslice, rule-status, tainted-claim-through-rule: no pod; they check kube's
//     internal maps (and, for rule-status, the status, which TestDeviceTaintRule's ports
//     and taintevict's own tests cover);
//   - evict-pod-resourceclaim-podgroup, no-evict-pod-in-podgroup-without-claim,
//     none-podgroup-rule: PodGroup reservations (DRAWorkloadResourceClaims, alpha and off
//     by default in v1.37), which taintevict does not implement;
//   - TestDeviceTaintRule/slow: the same decision as /delayed (its DELETE only answers
//     3 s late);
//   - BenchmarkTaintUntaint: a benchmark.
//
// Every pod of these has the same outcome on both sides, to the nanosecond of the bubble's
// clock (TestRetry within its slack). Two scenarios more, not of kube's table, show the
// listed differences: kube's device controller, as its node one, deletes a pod that has
// finished (kubernetes#96363); and it counts only tolerations of effect NoExecute, so it
// evicts at once a pod whose claim tolerates the taint with an empty effect, which the API
// says matches every effect (no kubernetes issue filed; see the tolerations package).
var deviceScenarios = []devScenario{
	{name: "kube bug: a finished pod",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(), finishedPod(podWithClaimName()))},
		diff:  &devDifference{pod: myPodKey, issue: "kubernetes#96363", kube: deleted(0), taintevict: kept}},
	{name: "kube bug: a toleration with an empty effect",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(resourcev1.DeviceToleration{Operator: resourcev1.DeviceTolerationOpExists}), podWithClaimName())},
		diff:  &devDifference{pod: myPodKey, issue: "none filed: the tolerations package's documentation", kube: deleted(0), taintevict: kept}},
	{name: "evict-pod-resourceclaim",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(), podWithClaimName())},
		want:  map[string]devOutcome{myPodKey: deleted(0)}},
	{name: "evict-pod-rule",
		steps: []devStep{createAt(0, inUseClaim(), podWithClaimName(), ruleEvict())},
		want:  map[string]devOutcome{myPodKey: deleted(0)}},
	{name: "evict-pod-rule-later",
		steps: []devStep{createAt(0, inUseClaim(hourToleration), podWithClaimName(), ruleEvict())},
		want:  map[string]devOutcome{myPodKey: deleted(time.Hour)}},
	{name: "evict-many-pods-many-namespaces",
		steps: []devStep{createAt(0, inUseClaim(), podWithClaimName(), claimOtherNamespace(), podOtherNamespace(), ruleEvict())},
		want:  map[string]devOutcome{myPodKey: deleted(0), "default-other/my-pod": deleted(0)}},
	{name: "evict-many-pods-same-namespace",
		steps: []devStep{createAt(0, inUseClaim(), podWithClaimName(), claimOtherName(false), podOtherName(), ruleEvict())},
		want:  map[string]devOutcome{myPodKey: deleted(0), "default/my-pod-other": deleted(0)}},
	{name: "none-pod-rule",
		steps: []devStep{createAt(0, sliceUntaintedInstance(), inUseClaim(), podWithClaimName(), ruleNone())},
		want:  map[string]devOutcome{myPodKey: kept}},
	{name: "none-many-pods-many-namespaces",
		steps: []devStep{createAt(0, inUseClaim(), podWithClaimName(), claimOtherNamespace(), podOtherNamespace(), ruleNone())},
		want:  map[string]devOutcome{myPodKey: kept, "default-other/my-pod": kept}},
	{name: "none-many-pods-same-namespace",
		steps: []devStep{createAt(0, inUseClaim(), podWithClaimName(), claimOtherName(false), podOtherName(), ruleNone())},
		want:  map[string]devOutcome{myPodKey: kept, "default/my-pod-other": kept}},
	{name: "multiple-claims-same-rule",
		steps: []devStep{createAt(0, inUseClaim(), claimOtherName(true), podWithTwoClaims(), ruleEvict())},
		want:  map[string]devOutcome{myPodKey: deleted(0)}},
	{name: "multiple-claims-different-rules-order-1",
		steps: []devStep{createAt(0, inUseClaim(), claimOtherName(true), podWithTwoClaims(), ruleEvictInstance1(), ruleEvictInstance2Later())},
		want:  map[string]devOutcome{myPodKey: deleted(0)}},
	{name: "multiple-claims-different-rules-order-2",
		steps: []devStep{createAt(0, inUseClaim(), claimOtherName(true), podWithTwoClaims(), ruleEvictInstance2Later(), ruleEvictInstance1())},
		want:  map[string]devOutcome{myPodKey: deleted(0)}},
	{name: "evict-pod-resourceclaim-again (tolerated 60 s; the slice removed and added again at +10 s)",
		objects: objs(podWithClaimName(), sliceTainted(), slice2(), inUseClaim(minuteToleration)),
		steps:   []devStep{deleteAt(10*sec, sliceTainted()), createAt(10*sec, sliceTainted())},
		want:    map[string]devOutcome{myPodKey: deleted(time.Minute)}},
	{name: "evict-pod-after-scheduling",
		objects: objs(unscheduled(podWithClaimName()), sliceTainted(), slice2(), inUseClaim()),
		steps:   []devStep{updateAt(5*sec, podWithClaimName())},
		want:    map[string]devOutcome{myPodKey: deleted(5 * sec)}},
	{name: "evict-pod-resourceclaim-unrelated-changes (tolerated 60 s; the changes at +10 s)",
		objects: objs(podWithClaimName(), sliceTainted(), slice2(), inUseClaim(minuteToleration)),
		steps:   []devStep{updateAt(10*sec, sliceTaintedExtended(), inUseClaim(minuteToleration), podWithClaimName())},
		want:    map[string]devOutcome{myPodKey: deleted(time.Minute)}},
	{name: "evict-pod-resourceclaimtemplate",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(), podWithClaimTemplate("inStatus"))},
		want:  map[string]devOutcome{myPodKey: deleted(0)}},
	{name: "evict-pod-extended-resourceclaim",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(), podWithExtendedClaim())},
		want:  map[string]devOutcome{myPodKey: deleted(0)}},
	{name: "evict-pod-extended-resourceclaim-status-update",
		objects: objs(kPodObj(kNamespace, kPod, kPodUID, kNode), sliceTainted(), slice2(), inUseClaim()),
		steps:   []devStep{updateAt(5*sec, podWithExtendedClaim())},
		want:    map[string]devOutcome{myPodKey: deleted(5 * sec)}},
	{name: "no-evict-extended-resourceclaim-wrong-owner",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaimOld(), podWithExtendedClaim())},
		want:  map[string]devOutcome{myPodKey: kept}},
	{name: "evict-pod-later",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(hourToleration), podWithClaimName())},
		want:  map[string]devOutcome{myPodKey: deleted(time.Hour)}},
	{name: "evict-pod-later-many",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(
			dtol(kTaintKey+"-other", resourcev1.DeviceTolerationOpEqual, kValue, secs(20)),
			dtol("", resourcev1.DeviceTolerationOpExists, "", secs(60)),
			dtol("", resourcev1.DeviceTolerationOpExists, "", secs(30))), podWithClaimName())},
		want: map[string]devOutcome{myPodKey: deleted(30 * sec)}},
	{name: "evict-pod-toleration-mismatch",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(dtol(kTaintKey+"-other", resourcev1.DeviceTolerationOpEqual, kValue, secs(60))), podWithClaimName())},
		want:  map[string]devOutcome{myPodKey: deleted(0)}},
	{name: "no-evict-pod-toleration-forever",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(dtol("", resourcev1.DeviceTolerationOpExists, "", nil)), podWithClaimName())},
		want:  map[string]devOutcome{myPodKey: kept}},
	{name: "no-evict-pod-toleration-forever-many",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(
			dtol("", resourcev1.DeviceTolerationOpExists, "", secs(60)), dtol("", resourcev1.DeviceTolerationOpExists, "", nil)), podWithClaimName())},
		want: map[string]devOutcome{myPodKey: kept}},
	{name: "evict-pod-partial-toleration",
		steps: []devStep{createAt(0, sliceTaintedTwice(), slice2(), inUseClaim(dtol(kTaintKey, resourcev1.DeviceTolerationOpExists, "", nil)), podWithClaimName())},
		want:  map[string]devOutcome{myPodKey: deleted(0)}},
	{name: "evict-pod-many-taints",
		steps: []devStep{createAt(0, ruleEvict(), ruleEvictOther(), sliceTaintedTwice(), slice2(), inUseClaim(
			dtol(kTaintKey, resourcev1.DeviceTolerationOpExists, "", secs(60)), dtol(kTaintKey+"-other", resourcev1.DeviceTolerationOpExists, "", secs(30))), podWithClaimName())},
		want: map[string]devOutcome{myPodKey: deleted(30 * sec)}},
	{name: "no-evict-pod-not-scheduled",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(), unscheduled(podWithClaimName()))},
		want:  map[string]devOutcome{myPodKey: kept}},
	{name: "no-evict-no-taint",
		steps: []devStep{createAt(0, simpleSlice(), inUseClaim(), podWithClaimName())},
		want:  map[string]devOutcome{myPodKey: kept}},
	{name: "no-evict-no-taint-update",
		objects: objs(podWithClaimName(), simpleSlice(), inUseClaim()),
		steps:   []devStep{updateAt(10*sec, simpleSlice())},
		want:    map[string]devOutcome{myPodKey: kept}},
	{name: "no-evict-pod-resourceclaimtemplate-no-status",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(), podWithClaimTemplate(""))},
		want:  map[string]devOutcome{myPodKey: kept}},
	{name: "no-evict-pod-resourceclaimtemplate-no-claim",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(), podWithClaimTemplate("noClaim"))},
		want:  map[string]devOutcome{myPodKey: kept}},
	{name: "no-evict-other-device",
		steps: []devStep{createAt(0, sliceOtherDevices(), slice2(), inUseClaim(), podWithClaimTemplate("inStatus"))},
		want:  map[string]devOutcome{myPodKey: kept}},
	{name: "no-evict-wrong-pod",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaim(), podOtherUID())},
		want:  map[string]devOutcome{myPodKey: kept}},
	{name: "evict-wrong-pod-replaced",
		objects: objs(podOtherUID(), sliceTainted(), slice2(), inUseClaim()),
		steps:   []devStep{deleteAt(5*sec, podOtherUID()), createAt(5*sec, podWithClaimName())},
		want:    map[string]devOutcome{myPodKey: deleted(5 * sec)}},
	{name: "cancel-eviction-remove-taint (tolerated 60 s)",
		objects: objs(podWithClaimTemplate("inStatus"), sliceTainted(), slice2(), inUseClaim(minuteToleration)),
		steps:   []devStep{updateAt(10*sec, sliceUntaintedInstance())},
		want:    map[string]devOutcome{myPodKey: kept}},
	{name: "cancel-eviction-reduce-taint (tolerated 60 s)",
		objects: objs(podWithClaimTemplate("inStatus"), sliceTainted(), slice2(), inUseClaim(minuteToleration)),
		steps:   []devStep{updateAt(10*sec, sliceTaintedEffect(resourcev1.DeviceTaintEffectNoSchedule))},
		want:    map[string]devOutcome{myPodKey: kept}},
	{name: "ignore-none-effect",
		objects: objs(podWithClaimTemplate("inStatus"), sliceTaintedEffect(resourcev1.DeviceTaintEffectNone), slice2(), inUseClaim()),
		want:    map[string]devOutcome{myPodKey: kept}},
	{name: "ignore-unknown-effect",
		objects: objs(podWithClaimTemplate("inStatus"), sliceTaintedEffect("unknown-effect"), slice2(), inUseClaim()),
		want:    map[string]devOutcome{myPodKey: kept}},
	{name: "eviction-change-taint",
		objects: objs(podWithClaimTemplate("inStatus"), sliceTainted(), slice2(), inUseClaim(hourToleration)),
		steps:   []devStep{updateAt(10*sec, sliceTaintedWith(dtaint(kTaintKey, kValue+"-other", resourcev1.DeviceTaintEffectNoExecute)))},
		want:    map[string]devOutcome{myPodKey: deleted(10 * sec)}},
	{name: "cancel-eviction-remove-taint-in-new-slice (tolerated 60 s)",
		objects: objs(podWithClaimTemplate("inStatus"), sliceTainted(), slice2(), inUseClaim(minuteToleration)),
		steps:   []devStep{deleteAt(10*sec, sliceTainted()), createAt(10*sec, sliceReplaced())},
		want:    map[string]devOutcome{myPodKey: kept}},
	{name: "cancel-eviction-remove-slice (tolerated 60 s)",
		objects: objs(podWithClaimTemplate("inStatus"), sliceTainted(), slice2(), inUseClaim(minuteToleration)),
		steps:   []devStep{deleteAt(10*sec, sliceTainted())},
		want:    map[string]devOutcome{myPodKey: kept}},
	{name: "cancel-eviction-pod-deletion (and TestCancelEviction/pod-deleted)",
		objects: objs(podWithClaimName(), sliceTainted(), slice2(), inUseClaim(dtol("", resourcev1.DeviceTolerationOpExists, "", secs(60)))),
		steps:   []devStep{deleteAt(10*sec, podWithClaimName())},
		want:    map[string]devOutcome{myPodKey: kept}},
	{name: "no-evict-wrong-resourceclaim",
		steps: []devStep{createAt(0, sliceTainted(), slice2(), inUseClaimOld(), podWithClaimTemplate("inStatus"))},
		want:  map[string]devOutcome{myPodKey: kept}},
	{name: "evict-wrong-resourceclaim-replaced",
		objects: objs(podWithClaimTemplate("inStatus"), sliceTainted(), slice2(), inUseClaimOld()),
		steps:   []devStep{updateAt(5*sec, inUseClaim())},
		want:    map[string]devOutcome{myPodKey: deleted(5 * sec)}},
	{name: "no-evict-resourceclaim-deallocated (tolerated 60 s)",
		objects: objs(podWithClaimTemplate("inStatus"), sliceTainted(), slice2(), inUseClaim(minuteToleration)),
		steps:   []devStep{updateAt(10*sec, unallocatedClaim())},
		want:    map[string]devOutcome{myPodKey: kept}},
	{name: "no-evict-resourceclaim-deleted (tolerated 60 s)",
		objects: objs(podWithClaimTemplate("inStatus"), sliceTainted(), slice2(), inUseClaim(minuteToleration)),
		steps:   []devStep{deleteAt(10*sec, inUseClaim())},
		want:    map[string]devOutcome{myPodKey: kept}},

	{name: "TestEviction/initial",
		objects: objs(sliceTainted(), inUseClaim(), podWithClaimName()),
		want:    map[string]devOutcome{myPodKey: deleted(0)}},
	{name: "TestEviction/add",
		steps: []devStep{createAt(0, podWithClaimName(), sliceTainted(), inUseClaim())},
		want:  map[string]devOutcome{myPodKey: deleted(0)}},
	{name: "TestEviction/update",
		objects: objs(sliceUntaintedInstance(), unallocatedClaim(), unscheduled(podWithClaimName())),
		steps:   []devStep{updateAt(5*sec, podWithClaimName(), sliceTainted(), inUseClaim())},
		want:    map[string]devOutcome{myPodKey: deleted(5 * sec)}},
	{name: "TestEviction/delete",
		objects: objs(sliceTainted(), sliceNewerUntainted(), unallocatedClaim(), podWithClaimName()),
		steps:   []devStep{deleteAt(5*sec, sliceNewerUntainted(), unallocatedClaim()), createAt(5*sec, inUseClaim())},
		want:    map[string]devOutcome{myPodKey: deleted(5 * sec)}},
	{name: "TestCancelEviction/slice-deleted",
		objects: objs(sliceTainted(), inUseClaim(dtol("", resourcev1.DeviceTolerationOpExists, "", secs(60))), podWithClaimName()),
		steps:   []devStep{deleteAt(10*sec, sliceTainted())},
		want:    map[string]devOutcome{myPodKey: kept}},
	{name: "TestParallelPodDeletion (the pod is deleted by someone else right before the first request)",
		objects: objs(sliceTainted(), slice2(), inUseClaim(), podWithClaimName()),
		vanish:  true,
		want:    map[string]devOutcome{myPodKey: kept}},
	{name: "TestRetry (the first request fails with a 500)",
		objects:   objs(sliceTainted(), slice2(), inUseClaim(), podWithClaimName()),
		failFirst: true, slack: time.Second,
		want: map[string]devOutcome{myPodKey: deleted(0)}},
	{name: "TestDeviceTaintRule/immediate (a None rule made NoExecute at +20 s)",
		objects: objs(podWithClaimName(), inUseClaim(), ruleNone()),
		steps:   []devStep{updateAt(20*sec, withEffect(ruleNone(), resourcev1.DeviceTaintEffectNoExecute, 20*sec))},
		want:    map[string]devOutcome{myPodKey: deleted(20 * sec)}},
	{name: "TestDeviceTaintRule/delayed (tolerated 30 s by value)",
		objects: objs(podWithClaimName(), inUseClaim(resourcev1.DeviceToleration{Effect: resourcev1.DeviceTaintEffectNoExecute, Value: kValue, TolerationSeconds: secs(30)}), ruleNone()),
		steps:   []devStep{updateAt(20*sec, withEffect(ruleNone(), resourcev1.DeviceTaintEffectNoExecute, 20*sec))},
		want:    map[string]devOutcome{myPodKey: deleted(50 * sec)}},
}

const myPodKey = kNamespace + "/" + kPod

var (
	hourToleration   = dtol(kTaintKey, resourcev1.DeviceTolerationOpEqual, kValue, secs(3600))
	minuteToleration = dtol(kTaintKey, resourcev1.DeviceTolerationOpEqual, kValue, secs(60))
)

func unscheduled(p *v1.Pod) *v1.Pod { p.Spec.NodeName = ""; return p }

func finishedPod(p *v1.Pod) *v1.Pod { p.Status.Phase = v1.PodSucceeded; return p }

func podOtherUID() *v1.Pod { return kPodObj(kNamespace, kPod, kPodUID+"-other", kNode, kClaim) }

func claimOtherNamespace() *resourcev1.ResourceClaim {
	return kClaimObj(kNamespace+"-other", kClaim, kPodUID+"-2", otherDevices, [2]string{kPod, kPodUID + "-2"})
}

func podOtherNamespace() *v1.Pod {
	return kPodObj(kNamespace+"-other", kPod, kPodUID+"-2", kNode, kClaim)
}

// claimOtherName is my-pod-other's claim; shared, it is reserved for my-pod too.
func claimOtherName(shared bool) *resourcev1.ResourceClaim {
	reserved := [][2]string{{kPod + "-other", kPodUID + "-3"}}
	if shared {
		reserved = append([][2]string{myPod}, reserved...)
	}
	c := kClaimObj(kNamespace, kClaim+"-other", kPodUID+"-3", otherDevices, reserved...)
	c.OwnerReferences[0].Name = kPod + "-other"
	return c
}

func podOtherName() *v1.Pod {
	return kPodObj(kNamespace, kPod+"-other", kPodUID+"-3", kNode, kClaim+"-other")
}

func podWithTwoClaims() *v1.Pod {
	return kPodObj(kNamespace, kPod, kPodUID, kNode, kClaim, kClaim+"-other")
}

func sliceTaintedExtended() *resourcev1.ResourceSlice {
	return kSlice(func(s *resourcev1.ResourceSlice) {
		s.Spec.Devices[0].Taints = []resourcev1.DeviceTaint{kTaint}
		d := *s.Spec.Devices[0].DeepCopy()
		d.Name += "-other"
		s.Spec.Devices = append(s.Spec.Devices, d)
	})
}

func sliceTaintedTwice() *resourcev1.ResourceSlice {
	return sliceTaintedWith(dtaint(kTaintKey, "", resourcev1.DeviceTaintEffectNoExecute), dtaint(kTaintKey+"-other", "", resourcev1.DeviceTaintEffectNoExecute))
}

func sliceOtherDevices() *resourcev1.ResourceSlice {
	return kSlice(func(s *resourcev1.ResourceSlice) {
		for i := range s.Spec.Devices {
			s.Spec.Devices[i].Name += "-other"
		}
	})
}

// sliceReplaced is the pool's untainted slice of the next generation, under another name.
func sliceReplaced() *resourcev1.ResourceSlice {
	return kSlice(func(s *resourcev1.ResourceSlice) { s.Name += "-updated"; s.Spec.Pool.Generation++ })
}

// sliceNewerUntainted is kube's TestEviction/delete slice: the pool's, 100 generations newer,
// untainted.
func sliceNewerUntainted() *resourcev1.ResourceSlice {
	return kSlice(func(s *resourcev1.ResourceSlice) { s.Name += "-other"; s.Spec.Pool.Generation += 100 })
}

func withEffect(r *resourcev1.DeviceTaintRule, effect resourcev1.DeviceTaintEffect, added time.Duration) *resourcev1.DeviceTaintRule {
	r.Spec.Taint.Effect, r.Spec.Taint.TimeAdded = effect, kTime(added)
	return r
}
