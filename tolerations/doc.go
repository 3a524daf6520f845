// Package tolerations computes, without side effects, how a pod's tolerations meet a node's
// NoExecute taints: which taints a pod tolerates, with which toleration, for how long, and
// when the pod must leave the node. The same functions serve other taint carriers, such as
// DRA devices.
//
//	ev := tolerations.Deadline(node.Spec.Taints, pod.Spec.Tolerations, now, time.Time{}, tolerations.Options{})
//	switch ev.Verdict {
//	case tolerations.EvictNow: // the pod must leave now, for ev.Taint
//	case tolerations.EvictAt: // at ev.At, unless the taints or tolerations change before
//	case tolerations.Stay: // never, as they are
//	}
//
// Every function is pure: none starts a goroutine, reads a clock or keeps state, so all are
// safe for concurrent use. Time is a parameter.
//
// # Matching
//
// [Tolerates] decides whether one toleration tolerates one taint, exactly as the API types
// in k8s.io/api do. [Match] pairs every NoExecute taint with the toleration that decides
// it: by default ([NodeRules]) the first in list order that tolerates it, as
// kube-controller-manager does. The result therefore depends on the order: when a finite
// toleration is listed before one that tolerates the same taint forever, the finite one is
// used and the pod is evicted when it runs out. The numeric operators Lt and Gt, alpha in
// Kubernetes, tolerate nothing unless [Options.ComparisonOperators] is set.
//
// # Time
//
// [MinTolerationTime] is kube's rule for how long a set of tolerations lets a pod stay.
// [Deadline] is the rule this library is built on: each taint's countdown starts at its
// TimeAdded, so the answer does not change when the controller that asks restarts.
// [ObservedDeadline] is kube's own rule, where the countdown starts when a controller first
// scheduled the eviction, for callers that must match kube exactly.
//
// # Devices
//
// Devices allocated through Dynamic Resource Allocation carry taints too (DeviceTaint in
// k8s.io/api/resource/v1), tolerated by the DeviceTolerations of the request that
// allocated the device. [DeviceTaints] and [DeviceTolerations] convert them to the core
// types, and [DeviceRules] make [Deadline], [Match] and [ObservedDeadline] follow kube's
// device taint eviction controller. A pod using several devices leaves at the earliest of
// their deadlines.
//
// # Validation
//
// [ValidateTaints] and [ValidateTolerations] reject what the API server rejects, so that
// objects that did not come through one (tests, files, other stores) can be checked before
// they are trusted.
package tolerations
