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
package compat
