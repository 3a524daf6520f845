package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The device side's scenarios (issue 19), on the real API server with -controllers=device:
// resource.k8s.io/v1 serves ResourceSlices, ResourceClaims and DeviceTaintRules there, and
// the scenes write each claim's allocation and reservation themselves.

// A device taint the pod does not tolerate evicts it at once, as kube does it: the device
// condition, then the delete, and kube's Event.
func TestDeviceEvictUntolerated(t *testing.T) {
	deviceEvictUntolerated(t, startController, deviceArgs...)
}

func deviceEvictUntolerated(t *testing.T, start starter, args ...string) {
	s := newDeviceScene(t, "gpu-0")
	s.podOnDevices("web", alloc{device: "gpu-0"})
	c := start(t, "controller", args...)

	tainted := time.Now()
	s.taintDevice("gpu-0", "ecc")
	pod, seen := s.waitDeleted("web")
	s.assertDeviceEvicted(pod)
	assertAt(t, "the untolerated pod's eviction", seen, tainted)
	// Two requests, kube makes three: the status patch and the DELETE, both bound to the
	// pod's UID; no GET.
	var got []string
	for _, e := range waitAudit(t, c.id, 2, writesPod(s.ns, "web")) {
		got = append(got, e.what())
	}
	assert.Equal(t, []string{"patch pods/status", "delete pods"}, got)
	reads, err := auditEvents(c.id, func(e auditEvent) bool {
		return writesPod(s.ns, "web")(e) || e.Verb == "get" && e.ObjectRef != nil && e.ObjectRef.Resource == "pods"
	})
	assert.NoError(t, err)
	assert.Len(t, reads, 2, "no GET of the pod")
}

// A toleration of 5 s is evicted at TimeAdded + 5 s; one with no tolerationSeconds is
// never evicted.
func TestDeviceEvictAtDeadlineAndKeepForever(t *testing.T) {
	s := newDeviceScene(t, "gpu-0")
	s.podOnDevices("web", alloc{"gpu-0", "ecc", ptr.To[int64](5)})
	s.podOnDevices("forever", alloc{"gpu-0", "ecc", nil})
	startController(t, "controller", deviceArgs...)

	added := s.taintDevice("gpu-0", "ecc")
	pod, seen := s.waitDeleted("web")
	s.assertDeviceEvicted(pod)
	assertAt(t, "the 5 s toleration's eviction", seen, added.Add(5*time.Second))
	s.assertNotEvicted("forever")
}

// A DeviceTaintRule created later evicts the pods that use the devices it selects, at its
// TimeAdded; one deleted before the deadline cancels the eviction, and says so. A pod of
// another device, tolerating the first rule for 5 s too, shows when the cancelled
// deadline has passed. Each rule's status says what it evicts, as kube writes it.
func TestDeviceRules(t *testing.T) { deviceRules(t, startController, deviceArgs...) }

func deviceRules(t *testing.T, start starter, args ...string) {
	s := newDeviceScene(t, "gpu-0", "gpu-1", "gpu-2")
	s.podOnDevices("web", alloc{device: "gpu-0"})
	cancelled := s.podOnDevices("cancelled", alloc{"gpu-1", "ecc", ptr.To[int64](4)})
	s.podOnDevices("witness", alloc{"gpu-2", "ecc", ptr.To[int64](5)})
	c := start(t, "controller", args...)

	created := time.Now()
	s.rule("web", "ecc", resourcev1.DeviceTaintEffectNoExecute, nil, "gpu-0")
	pod, seen := s.waitDeleted("web")
	s.assertDeviceEvicted(pod)
	assertAt(t, "the eviction by a rule", seen, created)

	s.rule("cancelled", "ecc", resourcev1.DeviceTaintEffectNoExecute, nil, "gpu-1")
	s.rule("witness", "ecc", resourcev1.DeviceTaintEffectNoExecute, nil, "gpu-2")
	cond := s.ruleCondition("witness", func(c metav1.Condition) bool { return c.Reason == "PodsPendingEviction" })
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
	assert.Equal(t, "1 pod needs to be evicted in 1 namespace.", cond.Message)
	c.waitOutput(t, "scheduled  "+s.ns+"/cancelled", failAfter)
	s.deleteRule("cancelled")
	s.waitDeviceEvent(cancelled, "Cancelling deletion")
	s.waitDeleted("witness")
	s.assertNotEvicted("cancelled")

	// The status follows within a period (10 s): Completed, with the count.
	cond = s.ruleCondition("web", func(c metav1.Condition) bool { return c.Reason == "Completed" })
	assert.Equal(t, "1 pod evicted since starting the controller.", cond.Message)
	s.rule("dry", "ecc", resourcev1.DeviceTaintEffectNone, nil)
	cond = s.ruleCondition("dry", func(c metav1.Condition) bool { return c.Reason == "NoEffect" })
	assert.True(t, strings.HasPrefix(cond.Message, "3 published devices selected. 3 allocated devices selected. 1 pod would be evicted in 1 namespace if the effect was NoExecute."), cond.Message)
}

// A pod whose claim was allocated two tainted devices goes at the earlier of their
// deadlines; a pod whose claim is reserved for another pod is not evicted.
func TestDeviceTwoDevicesAndReservation(t *testing.T) {
	s := newDeviceScene(t, "gpu-0", "gpu-1")
	s.podOnDevices("two", alloc{"gpu-0", "ecc", ptr.To[int64](6)}, alloc{"gpu-1", "ecc", ptr.To[int64](3)})
	other := s.devicePod("not-reserved", "shared")
	other.UID = types.UID("another-pod")
	s.claimFor("shared", other, alloc{device: "gpu-0"})
	startController(t, "controller", deviceArgs...)

	s.taintDevice("gpu-0", "ecc")
	added := s.taintDevice("gpu-1", "ecc")
	_, seen := s.waitDeleted("two")
	assertAt(t, "the two-device pod's eviction", seen, added.Add(3*time.Second))
	s.assertNotEvicted("not-reserved")
}

// The controller is stopped 2 s into a 10 s toleration and a new one starts 3 s later: the
// pod is evicted at TimeAdded + 10 s.
func TestDeviceRestartKeepsDeadline(t *testing.T) {
	s := newDeviceScene(t, "gpu-0")
	s.podOnDevices("web", alloc{"gpu-0", "ecc", ptr.To[int64](10)})
	first := startController(t, "first controller", deviceArgs...)

	added := s.taintDevice("gpu-0", "ecc")
	first.waitOutput(t, "scheduled  "+s.ns+"/web", failAfter)
	sleepUntil(added.Add(2 * time.Second))
	first.stop(t, 10*time.Second)
	s.assertNotEvicted("web")

	sleepUntil(added.Add(5 * time.Second))
	startController(t, "second controller", deviceArgs...)
	_, seen := s.waitDeleted("web")
	assertAt(t, "the eviction after the restart", seen, added.Add(10*time.Second))
}
