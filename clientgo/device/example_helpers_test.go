package device_test

import (
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/taintevict/taintevict/clientgo/internal/fixtures"
	"github.com/taintevict/taintevict/eviction/engine"
)

// The examples' fixtures live here, apart from the examples, so that the documentation
// shows each example's body alone.

// taintedGPU returns the objects of a cluster where the driver gpu.example.com tainted its
// device gpu-0 of pool node-1 at added (gpu.example.com/ecc:NoExecute), and the pod
// ml/train uses it through its claim ml/gpu, allocated and reserved for it, which does not
// tolerate the taint.
func taintedGPU(added time.Time) []runtime.Object {
	at := metav1.NewTime(added)
	return []runtime.Object{
		&resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpus"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: "gpu.example.com", Pool: resourcev1.ResourcePool{Name: "node-1", ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0", Taints: []resourcev1.DeviceTaint{
				{Key: "gpu.example.com/ecc", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &at}}}},
		}},
		&resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gpu"}, Status: resourcev1.ResourceClaimStatus{
			Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
				{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "train", UID: "uid-1"}},
		}},
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train", UID: "uid-1"}, Spec: v1.PodSpec{NodeName: "node-1",
			ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: new("gpu")}}}},
	}
}

// notify returns the Observer that sends each pod evicted on ch.
func notify(ch chan<- engine.Ref) engine.Observer { return fixtures.Evicted(ch) }
