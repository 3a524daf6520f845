package tolerations_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// benchNow is the "now" of the benchmarks: a node that went unreachable 40 s ago.
var benchNow = t0

// benchNode is a realistic node during an outage: the node lifecycle controller's
// unreachable and not-ready NoExecute taints with TimeAdded, a maintenance NoExecute taint,
// and NoSchedule taints that Deadline must skip.
func benchNode() []v1.Taint {
	return []v1.Taint{
		noExecAt("node.kubernetes.io/unreachable", benchNow.Add(-40*time.Second)),
		noExecAt("node.kubernetes.io/not-ready", benchNow.Add(-45*time.Second)),
		{Key: "node-role.kubernetes.io/control-plane", Effect: v1.TaintEffectNoSchedule},
		{Key: "example.com/maintenance", Value: "drain", Effect: v1.TaintEffectNoExecute, TimeAdded: added(benchNow.Add(-10 * time.Second))},
		{Key: "node.kubernetes.io/disk-pressure", Effect: v1.TaintEffectNoSchedule},
	}
}

// benchPod has 10 tolerations; those that tolerate the node's NoExecute taints sit at the
// end, as the DefaultTolerationSeconds admission plugin appends them.
func benchPod() []v1.Toleration {
	return []v1.Toleration{
		{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
		{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "infra", Effect: v1.TaintEffectNoSchedule},
		{Key: "node-role.kubernetes.io/control-plane", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
		{Key: "example.com/zone", Operator: v1.TolerationOpEqual, Value: "eu", Effect: v1.TaintEffectNoExecute},
		{Key: "node.kubernetes.io/disk-pressure", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/memory-pressure", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
		{Key: "example.com/spot", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(120)},
		{Key: "example.com/maintenance", Operator: v1.TolerationOpEqual, Value: "drain", Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(3600)},
		{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(300)},
		{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(300)},
	}
}

var (
	sinkEviction tolerations.Eviction
	sinkUsed     []v1.Toleration
)

func BenchmarkDeadline(b *testing.B) {
	taints, tols := benchNode(), benchPod()
	fallback := benchNow.Add(-time.Minute)
	opts := tolerations.Options{}
	want := benchNow.Add(255 * time.Second) // not-ready: added 45 s ago, tolerated 300 s
	if got := tolerations.Deadline(taints, tols, benchNow, fallback, opts); got.Verdict != tolerations.EvictAt || !got.At.Equal(want) {
		b.Fatalf("got %v at %v, want EvictAt at %v", got.Verdict, got.At, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkEviction = tolerations.Deadline(taints, tols, benchNow, fallback, opts)
	}
}

func BenchmarkObservedDeadline(b *testing.B) {
	taints, tols := benchNode(), benchPod()
	since := benchNow.Add(-30 * time.Second)
	opts := tolerations.Options{}
	want := since.Add(300 * time.Second)
	if got := tolerations.ObservedDeadline(taints, tols, since, benchNow, opts); got.Verdict != tolerations.EvictAt || !got.At.Equal(want) {
		b.Fatalf("got %v at %v, want EvictAt at %v", got.Verdict, got.At, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkEviction = tolerations.ObservedDeadline(taints, tols, since, benchNow, opts)
	}
}

func BenchmarkMatch(b *testing.B) {
	taints, tols := benchNode(), benchPod()
	opts := tolerations.Options{}
	if used, ok := tolerations.Match(taints, tols, opts); !ok || len(used) != 3 {
		b.Fatalf("got %d tolerations, ok %v, want 3, true", len(used), ok)
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkUsed, _ = tolerations.Match(taints, tols, opts)
	}
}

// The DeviceRules benchmarks run on the same taints and tolerations as the ones above, so
// that the figures compare: under DeviceRules every toleration is read for every NoExecute
// taint, where NodeRules stop at the first that tolerates it.

func BenchmarkDeadlineDeviceRules(b *testing.B) {
	taints, tols := benchNode(), benchPod()
	fallback := benchNow.Add(-time.Minute)
	opts := tolerations.Options{Rules: tolerations.DeviceRules}
	want := benchNow.Add(255 * time.Second) // not-ready: added 45 s ago, tolerated 300 s
	if got := tolerations.Deadline(taints, tols, benchNow, fallback, opts); got.Verdict != tolerations.EvictAt || !got.At.Equal(want) {
		b.Fatalf("got %v at %v, want EvictAt at %v", got.Verdict, got.At, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkEviction = tolerations.Deadline(taints, tols, benchNow, fallback, opts)
	}
}

func BenchmarkObservedDeadlineDeviceRules(b *testing.B) {
	taints, tols := benchNode(), benchPod()
	since := benchNow.Add(-30 * time.Second)
	opts := tolerations.Options{Rules: tolerations.DeviceRules}
	want := since.Add(300 * time.Second)
	if got := tolerations.ObservedDeadline(taints, tols, since, benchNow, opts); got.Verdict != tolerations.EvictAt || !got.At.Equal(want) {
		b.Fatalf("got %v at %v, want EvictAt at %v", got.Verdict, got.At, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkEviction = tolerations.ObservedDeadline(taints, tols, since, benchNow, opts)
	}
}

// benchDevice is a GPU during a health incident: the driver's NoExecute taint, a
// DeviceTaintRule's maintenance taint, and an informational None taint; and the tolerations
// of the claim's request.
func benchDevice() ([]resourcev1.DeviceTaint, []resourcev1.DeviceToleration) {
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: benchNow.Add(d)} }
	taints := []resourcev1.DeviceTaint{
		{Key: "gpu.example.com/unhealthy", Value: "ecc", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: at(-40 * time.Second)},
		{Key: "gpu.example.com/firmware", Value: "outdated", Effect: resourcev1.DeviceTaintEffectNone, TimeAdded: at(-time.Hour)},
		{Key: "example.com/maintenance", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: at(-10 * time.Second)},
	}
	tols := []resourcev1.DeviceToleration{
		{Key: "gpu.example.com/firmware", Operator: resourcev1.DeviceTolerationOpExists},
		{Key: "example.com/maintenance", Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: secs(3600)},
		{Key: "gpu.example.com/unhealthy", Operator: resourcev1.DeviceTolerationOpEqual, Value: "ecc", Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: secs(600)},
		{Key: "gpu.example.com/unhealthy", Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: secs(300)},
	}
	return taints, tols
}

// BenchmarkDeviceDeadline is what a caller holding device objects pays per device: the two
// conversions (one allocation each) and Deadline under DeviceRules.
func BenchmarkDeviceDeadline(b *testing.B) {
	dt, dtol := benchDevice()
	opts := tolerations.Options{Rules: tolerations.DeviceRules}
	want := benchNow.Add(260 * time.Second) // unhealthy: added 40 s ago, shortest toleration 300 s
	if got := tolerations.Deadline(tolerations.DeviceTaints(dt), tolerations.DeviceTolerations(dtol), benchNow, time.Time{}, opts); got.Verdict != tolerations.EvictAt || !got.At.Equal(want) {
		b.Fatalf("got %v at %v, want EvictAt at %v", got.Verdict, got.At, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkEviction = tolerations.Deadline(tolerations.DeviceTaints(dt), tolerations.DeviceTolerations(dtol), benchNow, time.Time{}, opts)
	}
}
