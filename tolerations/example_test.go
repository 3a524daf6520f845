package tolerations_test

import (
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/tolerations"
)

func ExampleTolerates() {
	taint := v1.Taint{Key: "node.kubernetes.io/unreachable", Effect: v1.TaintEffectNoExecute}
	exists := v1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists}
	other := v1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists}

	fmt.Println(tolerations.Tolerates(&exists, &taint, tolerations.Options{}))
	fmt.Println(tolerations.Tolerates(&other, &taint, tolerations.Options{}))
	// Output:
	// true
	// false
}

func ExampleMatch() {
	taints := []v1.Taint{
		{Key: "node.kubernetes.io/unreachable", Effect: v1.TaintEffectNoExecute},
		{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}, // ignored: not NoExecute
	}
	sixty := int64(60)
	tols := []v1.Toleration{
		{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists,
			Effect: v1.TaintEffectNoExecute, TolerationSeconds: &sixty},
		{Operator: v1.TolerationOpExists}, // tolerates every taint forever, but comes second
	}

	used, ok := tolerations.Match(taints, tols, tolerations.Options{})
	fmt.Println(ok, len(used), *used[0].TolerationSeconds)
	// Output:
	// true 1 60
}

func ExampleMinTolerationTime() {
	thirty, ten := int64(30), int64(10)
	used := []v1.Toleration{{TolerationSeconds: &thirty}, {TolerationSeconds: &ten}, {}}
	fmt.Println(tolerations.MinTolerationTime(used))
	fmt.Println(tolerations.MinTolerationTime([]v1.Toleration{{}})) // nil seconds: forever
	// Output:
	// 10s true
	// 0s false
}

func ExampleDeadline() {
	// The node went unreachable at 12:00; the pod tolerates that for 300 s.
	added := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	taints := []v1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: v1.TaintEffectNoExecute,
		TimeAdded: &metav1.Time{Time: added}}}
	seconds := int64(300)
	tols := []v1.Toleration{{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists,
		Effect: v1.TaintEffectNoExecute, TolerationSeconds: &seconds}}

	now := added.Add(time.Minute)
	e := tolerations.Deadline(taints, tols, now, time.Time{}, tolerations.Options{})
	fmt.Println(e.Verdict, e.At.Format(time.TimeOnly), e.Toleration == &tols[0])

	// A minute later, say after a restart, the deadline has not moved.
	e = tolerations.Deadline(taints, tols, now.Add(time.Minute), time.Time{}, tolerations.Options{})
	fmt.Println(e.Verdict, e.At.Format(time.TimeOnly))
	// Output:
	// EvictAt 12:05:00 true
	// EvictAt 12:05:00
}

func ExampleDeviceTaints() {
	// A GPU was tainted NoExecute at 12:00. The claim's request tolerates that for 600 s and,
	// with a second toleration, for 120 s: under kube's device rules the shortest counts,
	// whatever the order. A toleration of effect NoSchedule only lets the claim be
	// allocated the device; it does not count for eviction.
	added := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	at, unhealthy := &metav1.Time{Time: added}, "gpu.example.com/unhealthy"
	exists, noExecute := resourcev1.DeviceTolerationOpExists, resourcev1.DeviceTaintEffectNoExecute
	device := []resourcev1.DeviceTaint{
		{Key: unhealthy, Effect: noExecute, TimeAdded: at},
		{Key: "gpu.example.com/firmware", Effect: resourcev1.DeviceTaintEffectNone, TimeAdded: at},
	}
	long, short := int64(600), int64(120)
	claim := []resourcev1.DeviceToleration{
		{Operator: exists, Effect: resourcev1.DeviceTaintEffectNoSchedule}, // ignored for eviction
		{Key: unhealthy, Operator: exists, Effect: noExecute, TolerationSeconds: &long},
		{Key: unhealthy, Operator: exists, Effect: noExecute, TolerationSeconds: &short},
	}

	taints, tols := tolerations.DeviceTaints(device), tolerations.DeviceTolerations(claim)
	now := added.Add(time.Minute)
	deviceRules := tolerations.Options{Rules: tolerations.DeviceRules}
	e := tolerations.Deadline(taints, tols, now, time.Time{}, deviceRules)
	fmt.Println(e.Verdict, e.At.Format(time.TimeOnly), e.Toleration == &tols[2])

	// Under the node rules the first toleration that tolerates the taint decides.
	e = tolerations.Deadline(taints, tols, now, time.Time{}, tolerations.Options{})
	fmt.Println(e.Verdict, e.At.Format(time.TimeOnly))
	// Output:
	// EvictAt 12:02:00 true
	// EvictAt 12:10:00
}

func ExampleObservedDeadline() {
	// kube's own rule: the countdown starts at since, when the eviction was first scheduled;
	// TimeAdded is not read.
	taints := []v1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: v1.TaintEffectNoExecute}}
	seconds := int64(300)
	tols := []v1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists,
		Effect: v1.TaintEffectNoExecute, TolerationSeconds: &seconds}}

	since := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	now := since.Add(time.Minute)
	e := tolerations.ObservedDeadline(taints, tols, since, now, tolerations.Options{})
	fmt.Println(e.Verdict, e.At.Format(time.TimeOnly))

	// A caller that forgot since (a restart) starts the countdown again.
	e = tolerations.ObservedDeadline(taints, tols, time.Time{}, now, tolerations.Options{})
	fmt.Println(e.Verdict, e.At.Format(time.TimeOnly))
	// Output:
	// EvictAt 12:05:00
	// EvictAt 12:06:00
}

func ExampleValidateTolerations() {
	seconds := int64(60)
	tols := []v1.Toleration{
		{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists,
			Effect: v1.TaintEffectNoExecute, TolerationSeconds: &seconds},
		{Key: "dedicated", Operator: v1.TolerationOpExists, Value: "gpu"},
	}
	err := tolerations.ValidateTolerations(tols, tolerations.Options{})
	fmt.Println(err)

	var fe *tolerations.FieldError
	fmt.Println(errors.Is(err, tolerations.ErrInvalid), errors.As(err, &fe), fe.Field)
	// Output:
	// tolerations: tolerations[1].value: invalid value "gpu": value must be empty when operator is Exists
	// true true tolerations[1].value
}
