package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// podGroupFlags are the kube-apiserver flags that serve PodGroups (scheduling.k8s.io/v1beta1,
// beta and off by default in v1.37) and keep a pod's spec.schedulingGroup: the GenericWorkload
// gate, and DRAWorkloadResourceClaims, with which kube's scheduler reserves a claim for a
// PodGroup.
var podGroupFlags = []string{
	"feature-gates", "GenericWorkload=true,DRAWorkloadResourceClaims=true",
	"runtime-config", "scheduling.k8s.io/v1beta1=true",
}

// A ResourceClaim reserved for a PodGroup (DRAWorkloadResourceClaims) binds the group's pods
// that use it, on an API server that serves PodGroups (a control plane of the test's own,
// with podGroupFlags), with -controllers=device and no flag of its own (-device-pod-groups
// defaults to auto): a rule of effect None counts them, and a taint of the device evicts
// them both, as kube's controller does with its gate on; a pod of the group that does not
// use the claim stays. On the suite's server, which does not serve PodGroups, the field that
// names a pod's group is dropped: no pod can be bound through one.
func TestDevicePodGroup(t *testing.T) {
	t.Run("served", func(t *testing.T) {
		fp := startFaultPlane(t, podGroupFlags...)
		fp.use(t)
		s := newDeviceScene(t, "gpu-0")
		group, err := admin.SchedulingV1beta1().PodGroups(s.ns).Create(s.ctx, &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "g"},
			Spec:       schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err, "creating the PodGroup")
		var members []*v1.Pod
		for _, name := range []string{"worker-0", "worker-1"} {
			members = append(members, s.groupPod(name, "g", "shared"))
		}
		outsider := s.groupPod("no-claim", "g")
		s.claimForGroup("shared", group, alloc{device: "gpu-0"})
		startController(t, "controller", deviceArgs...)

		s.rule("dry", "ecc", resourcev1.DeviceTaintEffectNone, nil)
		c := s.ruleCondition("dry", func(c metav1.Condition) bool { return c.Reason == "NoEffect" })
		assert.Contains(t, c.Message, "1 allocated device selected. 2 pods would be evicted in 1 namespace", "the None rule counts the group's pods")

		tainted := time.Now()
		s.taintDevice("gpu-0", "ecc")
		for _, p := range members {
			pod, seen := s.waitDeleted(p.Name)
			s.assertDeviceEvicted(pod)
			assertAt(t, p.Name+"'s eviction", seen, tainted)
		}
		time.Sleep(time.Second)
		s.assertNotEvicted(outsider.Name)
	})
	t.Run("not served", func(t *testing.T) {
		s := newScene(t)
		groups, err := admin.Discovery().ServerGroups()
		require.NoError(t, err)
		for _, g := range groups.Groups {
			if g.Name != "scheduling.k8s.io" {
				continue
			}
			for _, v := range g.Versions {
				list, err := admin.Discovery().ServerResourcesForGroupVersion(v.GroupVersion)
				require.NoError(t, err)
				for _, r := range list.APIResources {
					assert.NotEqual(t, "podgroups", r.Name, "%s serves PodGroups on the suite's server", v.GroupVersion)
				}
			}
		}
		p := newPod(s.ns, "worker", s.prefix+"-node")
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("g")}
		pod, err := admin.CoreV1().Pods(s.ns).Create(s.ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Nil(t, pod.Spec.SchedulingGroup, "spec.schedulingGroup kept by a server without GenericWorkload")
	})
}

// groupPod creates the pod name of the PodGroup group, using the claims by name.
func (s *deviceScene) groupPod(name, group string, claims ...string) *v1.Pod {
	s.t.Helper()
	p := newPod(s.ns, name, s.prefix+"-node")
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	for _, c := range claims {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: c, ResourceClaimName: ptr.To(c)})
	}
	pod, err := admin.CoreV1().Pods(s.ns).Create(s.ctx, p, metav1.CreateOptions{})
	require.NoError(s.t, err, "creating pod %s", name)
	require.NotNil(s.t, pod.Spec.SchedulingGroup, "pod %s: the server dropped spec.schedulingGroup", name)
	return pod
}

// claimForGroup creates the claim name, allocated the devices and reserved for the PodGroup
// group, as kube's scheduler does with DRAWorkloadResourceClaims.
func (s *deviceScene) claimForGroup(name string, group *schedulingv1beta1.PodGroup, allocs ...alloc) {
	s.t.Helper()
	require.NoError(s.t, s.allocateFor(name, resourcev1.ResourceClaimConsumerReference{
		APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: group.Name, UID: group.UID}, allocs...))
}
