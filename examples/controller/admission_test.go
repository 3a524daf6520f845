package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/device"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

const down = "example.com/down"

var admitNow = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

// syncedInformers starts the node side's informers over client (and the device side's,
// with devices) until the test ends, and returns them once synced.
func syncedInformers(t testing.TB, client *fake.Clientset, devices bool) (clientgo.Informers, *device.Informers) {
	t.Helper()
	factory := clientgo.NewFactory(client)
	inf, err := clientgo.NewInformers(factory)
	require.NoError(t, err)
	var dev *device.Informers
	if devices {
		d, err := device.NewInformers(factory)
		require.NoError(t, err)
		dev = &d
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		require.True(t, ok, "%v synced", typ)
	}
	return inf, dev
}

// admitCluster is three nodes, each with a pod that tolerates down for nothing, one for
// 300 s, and one forever.
func admitCluster() []runtime.Object {
	var objs []runtime.Object
	for _, n := range []string{"n1", "n2", "n3"} {
		objs = append(objs, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		for _, p := range []struct {
			name string
			tols []v1.Toleration
		}{{"web", nil}, {"db", tolerating(ptr.To[int64](300))}, {"agent", tolerating(nil)}} {
			objs = append(objs, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.name, Name: p.name + "-" + n, UID: types.UID(p.name + n)},
				Spec: v1.PodSpec{NodeName: n, Tolerations: p.tols}})
		}
	}
	return objs
}

func tolerating(seconds *int64) []v1.Toleration {
	return []v1.Toleration{{Key: down, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds}}
}

// nodeUpdate is the AdmissionReview of an update of node n1 from old's taints to new's,
// with annotations on the new one.
func nodeUpdate(t testing.TB, old, new []v1.Taint, annotations map[string]string) []byte {
	t.Helper()
	o := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: v1.NodeSpec{Taints: old}}
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: annotations}, Spec: v1.NodeSpec{Taints: new}}
	return review(t, "nodes", "n1", o, n)
}

func review(t testing.TB, resource, name string, old, new any) []byte {
	t.Helper()
	raw := func(o any) runtime.RawExtension {
		if o == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(o)
		require.NoError(t, err)
		return runtime.RawExtension{Raw: b}
	}
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "req-1", Name: name, Operation: admissionv1.Update,
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: resource}, Object: raw(new), OldObject: raw(old)},
	})
	require.NoError(t, err)
	return b
}

// admit posts body to a and returns its response.
func admit(t testing.TB, a *admitter, path string, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var r admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &r))
	require.NotNil(t, r.Response)
	assert.Equal(t, types.UID("req-1"), r.Response.UID)
	return r.Response
}

func TestAdmitNodes(t *testing.T) {
	inf, _ := syncedInformers(t, fake.NewClientset(admitCluster()...), false)
	taint := v1.Taint{Key: down, Effect: v1.TaintEffectNoExecute}
	soft := v1.Taint{Key: down, Effect: v1.TaintEffectNoSchedule}
	tests := []struct {
		name        string
		deny        float64
		opts        engine.Options
		old, new    []v1.Taint
		annotations map[string]string
		allowed     bool
		warnings    []string
		message     string
	}{
		{name: "a NoExecute taint", old: nil, new: []v1.Taint{taint}, allowed: true,
			warnings: []string{"taintevict: taint example.com/down:NoExecute on node n1 evicts 1 pod now (1 namespace), 1 more within 5m0s; 1 tolerates it forever"}},
		{name: "a NoSchedule taint", old: nil, new: []v1.Taint{soft}, allowed: true},
		{name: "a taint already there", old: []v1.Taint{taint}, new: []v1.Taint{taint, soft}, allowed: true},
		{name: "under the deny fraction", deny: 0.2, new: []v1.Taint{taint}, allowed: true,
			warnings: []string{"taintevict: taint example.com/down:NoExecute on node n1 evicts 1 pod now (1 namespace), 1 more within 5m0s; 1 tolerates it forever"}},
		{name: "over the deny fraction", deny: 0.1, new: []v1.Taint{taint}, allowed: false,
			warnings: []string{"taintevict: taint example.com/down:NoExecute on node n1 evicts 1 pod now (1 namespace), 1 more within 5m0s; 1 tolerates it forever"},
			message:  "taintevict: taint example.com/down:NoExecute on node n1 would evict 1 of the cluster's 9 pods at once, more than -admission-deny-fraction 0.1 allows; to do it anyway, set the annotation taintevict.io/allow-mass-eviction=true on the node n1 (in the same request, or before)"},
		{name: "over it, with the annotation", deny: 0.1, new: []v1.Taint{taint}, annotations: map[string]string{OverrideAnnotation: "true"}, allowed: true,
			warnings: []string{"taintevict: taint example.com/down:NoExecute on node n1 evicts 1 pod now (1 namespace), 1 more within 5m0s; 1 tolerates it forever",
				"taintevict: let through by the annotation taintevict.io/allow-mass-eviction=true, though it evicts 1 of the 9 pods at once, more than -admission-deny-fraction 0.1"}},
		{name: "the brake holds it", opts: engine.Options{Brake: engine.Brake{Fraction: 0.3}}, new: []v1.Taint{taint}, allowed: true,
			warnings: []string{"taintevict: taint example.com/down:NoExecute on node n1 evicts no pod; the brake would hold 2 pods; 1 tolerates it forever"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &admitter{node: &inf, nodeOpts: tc.opts, deny: tc.deny, horizon: time.Hour, now: func() time.Time { return admitNow }}
			r := admit(t, a, admitNodesPath, nodeUpdate(t, tc.old, tc.new, tc.annotations))
			assert.Equal(t, tc.allowed, r.Allowed)
			assert.Equal(t, tc.warnings, r.Warnings)
			if tc.message != "" {
				require.NotNil(t, r.Result)
				assert.Equal(t, tc.message, r.Result.Message)
				assert.Equal(t, int32(http.StatusForbidden), r.Result.Code)
			}
		})
	}
}

// The webhook never refuses for a fault of its own: it lets the request through and says
// why it cannot tell.
func TestAdmitCannotTell(t *testing.T) {
	taint := []v1.Taint{{Key: down, Effect: v1.TaintEffectNoExecute}}
	r := admit(t, &admitter{now: time.Now}, admitNodesPath, nodeUpdate(t, nil, taint, nil))
	assert.True(t, r.Allowed)
	assert.Equal(t, []string{"taintevict: cannot tell what this change evicts: the controller does not watch nodes (-controllers without node)"}, r.Warnings)

	inf, err := clientgo.NewInformers(clientgo.NewFactory(fake.NewClientset())) // never started
	require.NoError(t, err)
	r = admit(t, &admitter{node: &inf, now: time.Now}, admitNodesPath, nodeUpdate(t, nil, taint, nil))
	assert.True(t, r.Allowed)
	assert.Equal(t, []string{"taintevict: cannot tell what this change evicts: the controller's caches are not synced yet"}, r.Warnings)

	rec := httptest.NewRecorder()
	(&admitter{now: time.Now}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, admitNodesPath, bytes.NewReader([]byte("{"))))
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	rec = httptest.NewRecorder()
	(&admitter{now: time.Now}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, admitNodesPath, nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

func TestAdmitDeviceTaintRules(t *testing.T) {
	const driver = "gpu.example.com"
	objs := []runtime.Object{&resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "pool"},
		Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: ptr.To("n1"), Pool: resourcev1.ResourcePool{Name: "pool", Generation: 1, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}}}}
	for i := range 2 {
		name := fmt.Sprintf("train-%d", i)
		claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: types.UID("c" + name)}}
		claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: driver, Pool: "pool", Device: fmt.Sprintf("gpu-%d", i)}}}}
		claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: name, UID: types.UID("p" + name)}}
		objs = append(objs, claim, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: types.UID("p" + name)},
			Spec: v1.PodSpec{NodeName: "n1", ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name)}}}})
	}
	inf, dev := syncedInformers(t, fake.NewClientset(objs...), true)
	a := &admitter{node: &inf, dev: dev, horizon: time.Hour, now: func() time.Time { return admitNow }}
	a.devOpts.Tolerations.Rules = tolerations.DeviceRules
	rule := func(effect resourcev1.DeviceTaintEffect, sel *resourcev1.DeviceTaintSelector) *resourcev1.DeviceTaintRule {
		return &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "maintenance"},
			Spec: resourcev1.DeviceTaintRuleSpec{DeviceSelector: sel, Taint: resourcev1.DeviceTaint{Key: down, Effect: effect}}}
	}
	// kubernetes#141422: an empty selector selects every device.
	r := admit(t, a, admitRulesPath, review(t, "devicetaintrules", "maintenance", nil, rule(resourcev1.DeviceTaintEffectNoExecute, &resourcev1.DeviceTaintSelector{})))
	assert.True(t, r.Allowed)
	assert.Equal(t, []string{"taintevict: DeviceTaintRule maintenance (taint example.com/down:NoExecute, on 2 devices) evicts 2 pods now (1 namespace)"}, r.Warnings)

	r = admit(t, a, admitRulesPath, review(t, "devicetaintrules", "maintenance", nil, rule(resourcev1.DeviceTaintEffectNone, &resourcev1.DeviceTaintSelector{})))
	assert.True(t, r.Allowed)
	assert.Empty(t, r.Warnings, "effect None evicts nothing")

	a.deny = 0.5
	r = admit(t, a, admitRulesPath, review(t, "devicetaintrules", "maintenance", nil, rule(resourcev1.DeviceTaintEffectNoExecute, &resourcev1.DeviceTaintSelector{})))
	assert.False(t, r.Allowed)
	assert.Contains(t, r.Result.Message, "would evict 2 of the cluster's 2 pods at once")

	// With -confirm-fraction the what-if still answers: the device side's census counts
	// from its informers, which no what-if of a rule has, so it leaves Confirm out (the
	// rule's status says what the controller holds).
	a.deny = 0
	_, a.devOpts = admissionOptions(flagsOf(t, "-kubeconfig", "/tmp/kc", "-controllers=node,device", "-confirm-fraction=0.5"))
	r = admit(t, a, admitRulesPath, review(t, "devicetaintrules", "maintenance", nil, rule(resourcev1.DeviceTaintEffectNoExecute, &resourcev1.DeviceTaintSelector{})))
	assert.True(t, r.Allowed)
	assert.Equal(t, []string{"taintevict: DeviceTaintRule maintenance (taint example.com/down:NoExecute, on 2 devices) evicts 2 pods now (1 namespace)"}, r.Warnings)
}
