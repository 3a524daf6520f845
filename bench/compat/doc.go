// Package compat holds a test only: one table of scenarios played against kube's taint
// eviction controller (k8s.io/kubernetes/pkg/controller/tainteviction, v1.37.2) and against
// taintevict's drop-in controller (the clientgo module's Controller), each on a fake clientset
// of its own, asserting the same outcome for every pod: deleted now, deleted at its
// deadline, or never.
//
// The scenarios cover those of kube's own taint_eviction_test.go (create pod, update pod,
// delete pod, create node, update node, delete node, multiple taints, multiple pods,
// eventual consistency). Where kube's behaviour is one of its known bugs, or a documented
// difference, the case is an expected difference: the test then asserts each side's own
// outcome, and names the kubernetes issue.
//
// Kube's controller runs on the real clock, so the test does too: tolerations are 2 to 4
// seconds, scenarios run in parallel, and each outcome is checked against the times the
// DELETE requests arrived.
//
// The device side has a table of its own (device_scenarios_test.go): the scenarios of
// kube's device_taint_eviction_test.go that decide eviction, played against kube's device
// taint eviction controller (k8s.io/kubernetes/pkg/controller/devicetainteviction,
// devicetainteviction.New) and against taintevict's (clientgo/device.Controller), each on a
// fake clientset inside a synctest bubble, as kube's own tests run: both on the bubble's
// clock, so every DELETE's time is compared exactly. The file lists which of kube's cases
// are ported, which are left out and why, and the two differences, listed kube bugs.
package compat
