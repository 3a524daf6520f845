package device

import (
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

const never = time.Duration(-1)

// step is a change made at a time since the start.
type step struct {
	at time.Duration
	do func(r *rig)
}

func createAt(at time.Duration, obj runtime.Object) step {
	return step{at, func(r *rig) { r.create(obj) }}
}

func updateAt(at time.Duration, obj runtime.Object) step {
	return step{at, func(r *rig) { r.update(obj) }}
}

func withSelector(sel *resourcev1.DeviceTaintSelector) *resourcev1.DeviceTaintSelector { return sel }

// device returns the selector of the one device pool/name of the test driver.
func device(pool, name string) *resourcev1.DeviceTaintSelector {
	return &resourcev1.DeviceTaintSelector{Driver: ptrTo(driver), Pool: ptrTo(pool), Device: ptrTo(name)}
}

func tainted(taints ...resourcev1.DeviceTaint) []resourcev1.DeviceTaint { return taints }

func owned(c *resourcev1.ResourceClaim, pod string) *resourcev1.ResourceClaim {
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod, UID: types.UID("uid-" + pod), Controller: ptrTo(true)}}
	return c
}

// fromTemplate makes the pod's claim "c" come from a template, made as claim.
func fromTemplate(p *v1.Pod, claim string) *v1.Pod {
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "c", ResourceClaimTemplateName: ptrTo("template")}}
	p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "c", ResourceClaimName: ptrTo(claim)}}
	return p
}

// TestEviction plays the model's cases on a Controller over a fake clientset, on the
// bubble's clock, and checks when each pod's DELETE came, to the nanosecond.
func TestEviction(t *testing.T) {
	bad := noExecute("bad", at(0))
	tests := []struct {
		name    string
		objects []runtime.Object
		steps   []step
		want    map[string]time.Duration
	}{
		{"untolerated slice taint evicts at once",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), claim("c0", []dev{{id: "p1/d0"}}, "web"), pod("web", "c0")},
			nil, map[string]time.Duration{"web": 0}},
		{"toleration of 60 s",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 60)}}}, "web"), pod("web", "c0")},
			nil, map[string]time.Duration{"web": time.Minute}},
		{"toleration forever",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", -1)}}}, "web"), pod("web", "c0")},
			nil, map[string]time.Duration{"web": never}},
		{"a toleration with an empty effect counts (kube: evicts at once)",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}),
				claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{{Operator: resourcev1.DeviceTolerationOpExists}}}}, "web"), pod("web", "c0"),
				claim("c1", []dev{{"p1/d0", []resourcev1.DeviceToleration{{Key: "bad", Operator: resourcev1.DeviceTolerationOpExists, TolerationSeconds: ptrTo[int64](60)}}}}, "db"), pod("db", "c1")},
			nil, map[string]time.Duration{"web": never, "db": time.Minute}},
		{"toleration of another key",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("other", -1)}}}, "web"), pod("web", "c0")},
			nil, map[string]time.Duration{"web": 0}},
		{"taint added to the slice later",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": nil}), claim("c0", []dev{{id: "p1/d0"}}, "web"), pod("web", "c0")},
			[]step{updateAt(20*time.Second, slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {noExecute("bad", at(20*time.Second))}}))},
			map[string]time.Duration{"web": 20 * time.Second}},
		{"slice taint removed first cancels",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 60)}}}, "web"), pod("web", "c0")},
			[]step{updateAt(30*time.Second, slice("p1", map[string][]resourcev1.DeviceTaint{"d0": nil}))},
			map[string]time.Duration{"web": never}},
		{"a TimeAdded in the future counts from first sight",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {noExecute("bad", at(time.Hour))}}), claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 60)}}}, "web"), pod("web", "c0")},
			nil, map[string]time.Duration{"web": time.Minute}},
		{"an older generation of the pool does not count",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), newer(slice("p1", map[string][]resourcev1.DeviceTaint{"d0": nil})), claim("c0", []dev{{id: "p1/d0"}}, "web"), pod("web", "c0")},
			nil, map[string]time.Duration{"web": never}},
		{"a rule added later evicts",
			[]runtime.Object{claim("c0", []dev{{id: "p1/d0"}}, "web"), pod("web", "c0")},
			[]step{createAt(30*time.Second, rule("r", device("p1", "d0"), noExecute("bad", at(30*time.Second))))},
			map[string]time.Duration{"web": 30 * time.Second}},
		{"a rule deleted first cancels",
			[]runtime.Object{rule("r", device("p1", "d0"), bad), claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 60)}}}, "web"), pod("web", "c0")},
			[]step{{30 * time.Second, func(r *rig) { r.deleteRule("r") }}},
			map[string]time.Duration{"web": never}},
		{"a rule without a selector selects nothing",
			[]runtime.Object{rule("r", nil, bad), claim("c0", []dev{{id: "p1/d0"}}, "web"), pod("web", "c0")},
			nil, map[string]time.Duration{"web": never}},
		{"an empty selector selects every device",
			[]runtime.Object{rule("r", &resourcev1.DeviceTaintSelector{}, bad), claim("c0", []dev{{id: "p1/d0"}}, "web"), claim("c1", []dev{{id: "p2/d7"}}, "db"), pod("web", "c0"), pod("db", "c1")},
			nil, map[string]time.Duration{"web": 0, "db": 0}},
		{"a rule selects by driver and pool",
			[]runtime.Object{rule("r", &resourcev1.DeviceTaintSelector{Driver: ptrTo(driver), Pool: ptrTo("p1")}, bad), claim("c0", []dev{{id: "p1/d0"}}, "web"), claim("c1", []dev{{id: "p2/d0"}}, "db"), pod("web", "c0"), pod("db", "c1")},
			nil, map[string]time.Duration{"web": 0, "db": never}},
		{"a rule of another driver",
			[]runtime.Object{rule("r", &resourcev1.DeviceTaintSelector{Driver: ptrTo("nic.example.com")}, bad), claim("c0", []dev{{id: "p1/d0"}}, "web"), pod("web", "c0")},
			nil, map[string]time.Duration{"web": never}},
		{"effects None and NoSchedule evict nothing",
			[]runtime.Object{rule("r1", &resourcev1.DeviceTaintSelector{}, resourcev1.DeviceTaint{Key: "x", Effect: resourcev1.DeviceTaintEffectNone}),
				slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {{Key: "y", Effect: resourcev1.DeviceTaintEffectNoSchedule}}}),
				claim("c0", []dev{{id: "p1/d0"}}, "web"), pod("web", "c0")},
			nil, map[string]time.Duration{"web": never}},
		{"a pod on two devices goes at the earlier deadline",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}, "d1": {bad}}),
				claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 120)}}, {"p1/d1", []resourcev1.DeviceToleration{tolerate("bad", 60)}}}, "web"), pod("web", "c0")},
			nil, map[string]time.Duration{"web": time.Minute}},
		{"a pod with two claims goes at the earlier deadline",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), rule("r", device("p2", "d9"), noExecute("ecc", at(0))),
				claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 120)}}}, "web"), claim("c1", []dev{{"p2/d9", []resourcev1.DeviceToleration{tolerate("ecc", 90)}}}, "web"), pod("web", "c0", "c1")},
			nil, map[string]time.Duration{"web": 90 * time.Second}},
		{"a claim not reserved for the pod does not evict it",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), claim("c0", []dev{{id: "p1/d0"}}, "other"), pod("web", "c0")},
			nil, map[string]time.Duration{"web": never}},
		{"a claim reserved for an earlier pod of the same name",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), claim("c0", []dev{{id: "p1/d0"}}, "web"), withUID(pod("web", "c0"), "uid-web-2")},
			nil, map[string]time.Duration{"web": never}},
		{"the reservation removed first cancels",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 60)}}}, "web"), pod("web", "c0")},
			[]step{updateAt(30*time.Second, claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 60)}}}))},
			map[string]time.Duration{"web": never}},
		{"the allocation removed first cancels",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 60)}}}, "web"), pod("web", "c0")},
			[]step{updateAt(30*time.Second, claim("c0", nil))},
			map[string]time.Duration{"web": never}},
		{"a claim allocated and reserved later evicts",
			[]runtime.Object{rule("r", device("p1", "d0"), bad), claim("c0", nil), pod("web", "c0")},
			[]step{updateAt(10*time.Second, claim("c0", []dev{{id: "p1/d0"}}, "web"))},
			map[string]time.Duration{"web": 10 * time.Second}},
		{"an unscheduled pod is never evicted",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), claim("c0", []dev{{id: "p1/d0"}}, "web"), unscheduled(pod("web", "c0"))},
			nil, map[string]time.Duration{"web": never}},
		{"a pod scheduled later is evicted then",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), claim("c0", []dev{{id: "p1/d0"}}, "web"), unscheduled(pod("web", "c0"))},
			[]step{updateAt(5*time.Second, pod("web", "c0"))},
			map[string]time.Duration{"web": 5 * time.Second}},
		{"a finished pod is never evicted",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), claim("c0", []dev{{id: "p1/d0"}}, "web"), finished(pod("web", "c0"))},
			nil, map[string]time.Duration{"web": never}},
		{"a claim made from a template for the pod",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), owned(claim("web-c-x", []dev{{id: "p1/d0"}}, "web"), "web"), fromTemplate(pod("web"), "web-c-x")},
			nil, map[string]time.Duration{"web": 0}},
		{"a claim named by the pod's status but not made for it",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), owned(claim("web-c-x", []dev{{id: "p1/d0"}}, "web"), "other"), fromTemplate(pod("web"), "web-c-x")},
			nil, map[string]time.Duration{"web": never}},
		{"the extended-resource claim",
			[]runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {bad}}), owned(claim("web-extended", []dev{{id: "p1/d0"}}, "web"), "web"), extended(pod("web"), "web-extended")},
			nil, map[string]time.Duration{"web": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, Options{}, tc.objects...)
				for _, s := range tc.steps {
					r.sleep(s.at - time.Since(r.start))
					s.do(r)
				}
				r.sleep(time.Hour - time.Since(r.start))
				for name, want := range tc.want {
					got, ok := r.deleted(name)
					switch {
					case want == never && ok:
						t.Errorf("%s: deleted at +%v, want never", name, got)
					case want != never && !ok:
						t.Errorf("%s: never deleted, want at +%v", name, want)
					case want != never && got != want:
						t.Errorf("%s: deleted at +%v, want at +%v", name, got, want)
					}
				}
			})
		})
	}
}

func newer(s *resourcev1.ResourceSlice) *resourcev1.ResourceSlice {
	s.Name += "-2"
	s.Spec.Pool.Generation = 2
	return s
}

func withUID(p *v1.Pod, uid types.UID) *v1.Pod { p.UID = uid; return p }

func unscheduled(p *v1.Pod) *v1.Pod { p.Spec.NodeName = ""; return p }

func finished(p *v1.Pod) *v1.Pod { p.Status.Phase = v1.PodSucceeded; return p }

func extended(p *v1.Pod, claim string) *v1.Pod {
	p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: claim}
	return p
}
