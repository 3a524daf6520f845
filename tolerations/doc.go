// Package tolerations computes, without side effects, how a pod's tolerations meet a node's
// NoExecute taints: which taints a pod tolerates, with which toleration, for how long, and
// when the pod must leave the node. The same functions serve other taint carriers, such as
// DRA devices (see Devices).
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
// in k8s.io/api do. [Match] pairs every NoExecute taint of a node with the first toleration,
// in list order, that tolerates it, as kube-controller-manager does for nodes (the default,
// [NodeRules]). The result therefore depends on the order of the tolerations: when a finite
// toleration is listed before a toleration that tolerates the same taint forever, the
// finite one is used and the pod is evicted when it runs out.
//
// The numeric operators Lt and Gt are alpha in Kubernetes and are off unless
// [Options.ComparisonOperators] is set; when off, a toleration that uses them tolerates
// nothing.
//
// # Time
//
// [MinTolerationTime] is kube's rule for how long a set of tolerations lets a pod stay.
// [Deadline] is the rule this library is built on: each taint's countdown starts at the
// taint's TimeAdded, so the answer does not change when the controller that asks restarts.
// [ObservedDeadline] is kube's own rule, where the countdown starts when a controller first
// scheduled the eviction; it is offered for callers that must match kube exactly.
//
// # Devices
//
// Devices allocated through Dynamic Resource Allocation carry taints too (DeviceTaint in
// k8s.io/api/resource/v1), and a claim tolerates them with the DeviceTolerations of the
// request that allocated the device. [DeviceTaints] and [DeviceTolerations] convert them to
// the core types, and [Options.Rules] set to [DeviceRules] makes [Deadline], [Match] and
// [ObservedDeadline] follow kube's device taint eviction controller: the order of the
// tolerations does not matter, a toleration with nil tolerationSeconds tolerates the taint
// forever, otherwise the shortest tolerationSeconds counts, and Lt and Gt never match.
// [Deadline] then gives the time for one allocated device, counted from the taints'
// TimeAdded; a pod using several devices leaves at the earliest over them. [Rules] says the
// one way DeviceRules differ from kube's controller.
//
// # Validation
//
// [ValidateTaints] and [ValidateTolerations] reject what the API server rejects, so that
// objects that did not come through an API server (tests, files, other stores) can be checked
// before they are trusted.
package tolerations
