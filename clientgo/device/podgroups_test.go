package device

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// servePodGroups makes the fake clientset's discovery serve PodGroups, as an API server with
// GenericWorkload on and scheduling.k8s.io/v1beta1 enabled does.
func servePodGroups(c *fake.Clientset) {
	c.Resources = append(c.Resources, &metav1.APIResourceList{GroupVersion: "scheduling.k8s.io/v1beta1",
		APIResources: []metav1.APIResource{{Name: "podgroups", Namespaced: true, Kind: "PodGroup"}}})
}

// serveSchedulingV1 makes it serve scheduling.k8s.io/v1 (PriorityClasses) only, as an API
// server does by default.
func serveSchedulingV1(c *fake.Clientset) {
	c.Resources = append(c.Resources, &metav1.APIResourceList{GroupVersion: "scheduling.k8s.io/v1",
		APIResources: []metav1.APIResource{{Name: "priorityclasses", Kind: "PriorityClass"}}})
}

// inGroup puts the pod in the PodGroup group.
func inGroup(p *v1.Pod, group string) *v1.Pod {
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

// forGroup reserves the claim for the PodGroup group instead of pods.
func forGroup(c *resourcev1.ResourceClaim, group string) *resourcev1.ResourceClaim {
	c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: group, UID: types.UID("group-" + group)}}
	return c
}

// ownedByGroup makes the PodGroup group the claim's controller, as for a claim made from a
// template for the group.
func ownedByGroup(c *resourcev1.ResourceClaim, group string) *resourcev1.ResourceClaim {
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "PodGroup", Name: group, UID: types.UID("group-" + group), Controller: ptrTo(true)}}
	return c
}

// TestPodGroups: a claim reserved for a PodGroup binds the pods of the group that use it
// (by name, or made from a template for the group and named in their status), when the
// controller follows PodGroups: PodGroupsOn, or PodGroupsAuto on an API server that serves
// them; not with PodGroupsOff, nor with PodGroupsAuto on one that does not (kube with
// DRAWorkloadResourceClaims off). A pod of the group that does not use the claim is never
// bound, and a rule of effect None counts the group's pods.
func TestPodGroups(t *testing.T) {
	bad := noExecute("bad", at(time.Minute))
	taints := func(tainted bool) map[string][]resourcev1.DeviceTaint {
		if !tainted {
			return map[string][]resourcev1.DeviceTaint{"d0": nil, "d1": nil, "d2": nil}
		}
		return map[string][]resourcev1.DeviceTaint{"d0": {bad}, "d1": {bad}, "d2": nil}
	}
	objects := func() []runtime.Object {
		return []runtime.Object{
			slice("p1", taints(false)),
			forGroup(claim("shared", []dev{{id: "p1/d0"}}), "g"),
			inGroup(pod("a", "shared"), "g"),
			inGroup(pod("b"), "g"), // in the group, without the claim
			forGroup(ownedByGroup(claim("g-gpu-x", []dev{{id: "p1/d1"}}), "g"), "g"),
			inGroup(fromTemplate(pod("c"), "g-gpu-x"), "g"),
			forGroup(claim("other", []dev{{id: "p1/d2"}}), "g"), // an untainted device
			inGroup(pod("d", "other"), "g"),
			rule("dry", &resourcev1.DeviceTaintSelector{Driver: ptrTo(driver)}, resourcev1.DeviceTaint{Key: "x", Effect: resourcev1.DeviceTaintEffectNone}),
		}
	}
	for _, tc := range []struct {
		name   string
		mode   PodGroupMode
		setup  func(*fake.Clientset)
		follow bool
	}{
		{"on", PodGroupsOn, nil, true},
		{"off, though served", PodGroupsOff, servePodGroups, false},
		{"auto, served", PodGroupsAuto, servePodGroups, true},
		{"auto, scheduling.k8s.io/v1 only", PodGroupsAuto, serveSchedulingV1, false},
		{"auto, no scheduling.k8s.io", PodGroupsAuto, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRigWith(t, tc.setup, Options{PodGroups: tc.mode}, objects()...)
				want := "3 published devices selected. 3 allocated devices selected. 0 pods would be evicted in 0 different namespaces " +
					"if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update."
				if tc.follow {
					want = strings.Replace(want, "0 pods would be evicted in 0 different namespaces", "3 pods would be evicted in 1 namespace", 1)
				}
				if c := r.condition("dry"); c.Reason != ReasonNoEffect || c.Message != want {
					t.Errorf("the None rule: got %s %q, want %s %q", c.Reason, c.Message, ReasonNoEffect, want)
				}
				r.sleep(time.Minute)
				r.update(slice("p1", taints(true)))
				r.sleep(time.Hour)
				for name, want := range map[string]bool{"a": tc.follow, "b": false, "c": tc.follow, "d": false} {
					if got, ok := r.deleted(name); ok != want || ok && got != time.Minute {
						t.Errorf("%s: deleted %v at +%v, want deleted %v at +1m", name, ok, got, want)
					}
				}
			})
		})
	}
}

// TestPodGroupsDiscoveryRetried: with PodGroupsAuto, a discovery that fails is asked again
// every second, and nothing is evicted before it answers (what binds a pod is not known
// yet); once it answers that PodGroups are served, the group's pod goes.
func TestPodGroupsDiscoveryRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var asked atomic.Int32
		r := newRigWith(t, func(c *fake.Clientset) {
			servePodGroups(c)
			c.PrependReactor("get", "group", func(k8stesting.Action) (bool, runtime.Object, error) {
				if asked.Add(1) <= 3 {
					return true, nil, errors.New("connection refused")
				}
				return false, nil, nil
			})
		}, Options{},
			slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {noExecute("bad", at(0))}}),
			forGroup(claim("shared", []dev{{id: "p1/d0"}}), "g"), inGroup(pod("a", "shared"), "g"))
		r.sleep(time.Hour)
		if got, ok := r.deleted("a"); !ok || got != 3*time.Second {
			t.Errorf("a: deleted %v at +%v, want at +3s, when discovery first answered", ok, got)
		}
		if got := asked.Load(); got != 4 {
			t.Errorf("discovery asked %d times, want 4", got)
		}
	})
}

// TestPodGroupsDiscoveryForbidden: a discovery that is refused (403) is an answer: PodGroups
// are not followed, and the rest is evicted at once rather than never.
func TestPodGroupsDiscoveryForbidden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRigWith(t, func(c *fake.Clientset) {
			servePodGroups(c)
			c.PrependReactor("get", "group", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no discovery for you"))
			})
		}, Options{},
			slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {noExecute("bad", at(0))}}),
			forGroup(claim("shared", []dev{{id: "p1/d0"}}), "g"), inGroup(pod("a", "shared"), "g"),
			claim("own", []dev{{id: "p1/d0"}}, "b"), pod("b", "own"))
		r.sleep(time.Hour)
		if _, ok := r.deleted("a"); ok {
			t.Error("a: deleted, want kept: PodGroups not followed")
		}
		if got, ok := r.deleted("b"); !ok || got != 0 {
			t.Errorf("b: deleted %v at +%v, want at +0", ok, got)
		}
	})
}
