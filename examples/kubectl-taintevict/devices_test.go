package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const driver = "gpu.example.com"

// deviceCluster is a pool of two devices on node a-1, each allocated to a claim of one pod:
// train-0 tolerates down for 60 s, train-1 nothing; and a pod without claims.
func deviceCluster() []runtime.Object {
	objs := []runtime.Object{
		testNode("a-1", "a"),
		&resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "pool-a"},
			Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: ptr.To("a-1"),
				Pool:    resourcev1.ResourcePool{Name: "pool-a", Generation: 1, ResourceSliceCount: 1},
				Devices: []resourcev1.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}}},
		testPod("ml", "plain", "a-1"),
	}
	for i, tols := range [][]resourcev1.DeviceToleration{
		{{Key: down, Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)}},
		nil,
	} {
		name := []string{"train-0", "train-1"}[i]
		claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: k8stypes.UID("claim-" + name)}}
		claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: driver, Pool: "pool-a", Device: []string{"gpu-0", "gpu-1"}[i], Tolerations: tols}}}}
		claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: name, UID: k8stypes.UID("uid-" + name)}}
		pod := testPod("ml", name, "a-1")
		pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name)}}
		objs = append(objs, claim, pod)
	}
	return objs
}

func TestWhatIfDevices(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	// kubernetes#141422: an empty selector selects every device.
	everything := write("everything.yaml", `apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata:
  name: maintenance
spec:
  deviceSelector: {}
  taint:
    key: example.com/down
    effect: NoExecute
`)
	one := write("one.yaml", `apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata:
  name: one
spec:
  deviceSelector:
    device: gpu-1
  taint:
    key: example.com/down
    effect: NoExecute
`)
	tests := []struct {
		name    string
		args    []string
		want    map[string]string
		summary string
	}{
		{"a rule that selects every device", []string{"-f", everything}, map[string]string{"ml/train-0": "+1m0s", "ml/train-1": "now"},
			"evicts 1 pod now (1 namespace), 1 more within 1m0s"},
		{"a rule of one device", []string{"-f", one}, map[string]string{"ml/train-1": "now"}, "evicts 1 pod now (1 namespace)"},
		{"--device", []string{"--device", driver + "/pool-a/gpu-0", down + ":NoExecute"}, map[string]string{"ml/train-0": "+1m0s"}, "evicts 1 pod within 1m0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := jsonReport(t, deviceCluster(), append([]string{"what-if"}, tc.args...)...)
			assert.Equal(t, tc.want, whens(rep))
			assert.Equal(t, tc.summary, rep.Summary.Text)
		})
	}

	none := write("none.yaml", `apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata:
  name: none
spec:
  deviceSelector: {}
  taint:
    key: example.com/down
    effect: None
`)
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"effect None", []string{"-f", none}, `effect "None" evicts nothing`},
		{"not a rule", []string{"-f", write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n")}, "want a DeviceTaintRule"},
		{"no file", []string{"-f", filepath.Join(dir, "missing.yaml")}, "no such file"},
		{"a bad device", []string{"--device", "gpu-0", down + ":NoExecute"}, "want DRIVER/POOL/DEVICE"},
		{"a device without a taint", []string{"--device", driver + "/pool-a/gpu-0"}, "needs one taint to add"},
		{"a device and a node", []string{"--device", driver + "/pool-a/gpu-0", "node/a-1", down + ":NoExecute"}, "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runWith(t, deviceCluster(), append([]string{"what-if"}, tc.args...)...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, tc.stderr)
		})
	}
}
