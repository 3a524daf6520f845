package compat

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "k8s.io/api/core/v1"
)

const ms = time.Millisecond

func objs(o ...runtime.Object) []runtime.Object { return o }

func finished(p *v1.Pod) *v1.Pod { p.Status.Phase = v1.PodSucceeded; return p }

func terminating(p *v1.Pod) *v1.Pod {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	p.Finalizers = []string{"compat/keep"}
	return p
}

// scenarios are kube's taint_eviction_test.go cases, on the real clock with tolerations of
// 2 to 4 s (100 s where kube's test only needs "not yet"), and the known bugs of kube's
// controller as expected differences.
var scenarios = []scenario{
	// TestCreatePod
	{name: "create pod/not scheduled", objects: objs(node("node1", 1)),
		steps: []step{addPod(100*ms, pod("pod1", ""))}, want: map[string]outcome{"pod1": notDeleted}},
	{name: "create pod/on untainted node", objects: objs(node("node1")),
		steps: []step{addPod(100*ms, pod("pod1", "node1"))}, want: map[string]outcome{"pod1": notDeleted}},
	{name: "create pod/on tainted node", objects: objs(node("node1", 1)),
		steps: []step{addPod(100*ms, pod("pod1", "node1"))}, want: map[string]outcome{"pod1": deletedNow(100 * ms)}},
	{name: "create pod/on tainted node, finite toleration", objects: objs(node("node1", 1)),
		steps: []step{addPod(100*ms, pod("pod1", "node1", tol(1, 2)))}, want: map[string]outcome{"pod1": deletedAt(2 * time.Second)}},
	{name: "create pod/on tainted node, infinite toleration", objects: objs(node("node1", 1)),
		steps: []step{addPod(100*ms, pod("pod1", "node1", tol(1, -1)))}, want: map[string]outcome{"pod1": notDeleted}},
	{name: "create pod/on tainted node, toleration of another taint", objects: objs(node("node1", 1)),
		steps: []step{addPod(100*ms, pod("pod1", "node1", tol(2, -1)))}, want: map[string]outcome{"pod1": deletedNow(100 * ms)}},

	// TestUpdatePod
	{name: "update pod/scheduled onto tainted node", objects: objs(node("node1", 1), pod("pod1", "")),
		steps: []step{updatePod(300*ms, pod("pod1", "node1"))}, want: map[string]outcome{"pod1": deletedNow(300 * ms)}},
	{name: "update pod/scheduled onto tainted node, toleration", objects: objs(node("node1", 1), pod("pod1", "", tol(1, -1))),
		steps: []step{updatePod(300*ms, pod("pod1", "node1", tol(1, -1)))}, want: map[string]outcome{"pod1": notDeleted}},
	{name: "update pod/toleration removed", objects: objs(node("node1", 1), pod("pod1", "node1", tol(1, 100))),
		steps: []step{updatePod(500*ms, pod("pod1", "node1"))}, want: map[string]outcome{"pod1": deletedNow(500 * ms)}},
	{name: "update pod/toleration lengthened", objects: objs(node("node1", 1), pod("pod1", "node1", tol(1, 2))),
		steps: []step{updatePod(500*ms, pod("pod1", "node1", tol(1, 4)))},
		diff:  &difference{pod: "pod1", issue: "kubernetes#102993", kube: deletedAt(2 * time.Second), taintevict: deletedAt(4 * time.Second)}},
	{name: "update pod/toleration shortened", objects: objs(node("node1", 1), pod("pod1", "node1", tol(1, 4))),
		steps: []step{updatePod(500*ms, pod("pod1", "node1", tol(1, 2)))},
		diff:  &difference{pod: "pod1", issue: "kubernetes#108982", kube: deletedAt(4 * time.Second), taintevict: deletedAt(2 * time.Second)}},

	// TestDeletePod
	{name: "delete pod/before its deadline", objects: objs(node("node1", 1), pod("pod1", "node1", tol(1, 2))),
		steps: []step{deletePod(500*ms, "pod1")}, want: map[string]outcome{"pod1": notDeleted}},

	// TestCreateNode
	{name: "create node/untainted, pod assigned", objects: objs(pod("pod1", "node1")),
		steps: []step{addNode(300*ms, node("node1"))}, want: map[string]outcome{"pod1": notDeleted}},
	{name: "create node/tainted, pod assigned", objects: objs(pod("pod1", "node1")),
		steps: []step{addNode(300*ms, node("node1", 1))}, want: map[string]outcome{"pod1": deletedNow(300 * ms)}},
	{name: "create node/tainted, tolerating pod assigned", objects: objs(pod("pod1", "node1", tol(1, -1))),
		steps: []step{addNode(300*ms, node("node1", 1))}, want: map[string]outcome{"pod1": notDeleted}},

	// TestDeleteNode
	{name: "delete node/pending eviction", objects: objs(node("node1", 1), pod("pod1", "node1", tol(1, 2))),
		steps: []step{deleteNode(500*ms, "node1")},
		diff:  &difference{pod: "pod1", issue: "none (kube keeps the pending eviction by design)", kube: deletedAt(2 * time.Second), taintevict: notDeleted}},

	// TestUpdateNode
	{name: "update node/taint added", objects: objs(node("node1"), pod("pod1", "node1")),
		steps: []step{updateNode(300*ms, node("node1", 1))}, want: map[string]outcome{"pod1": deletedNow(300 * ms)}},
	{name: "update node/tolerated taint added", objects: objs(node("node1"), pod("pod1", "node1", tol(1, 100))),
		steps: []step{updateNode(300*ms, node("node1", 1))}, want: map[string]outcome{"pod1": notDeleted}},
	{name: "update node/one of two added taints tolerated", objects: objs(node("node1"), pod("pod1", "node1", tol(1, 100))),
		steps: []step{updateNode(300*ms, node("node1", 1, 2))}, want: map[string]outcome{"pod1": deletedNow(300 * ms)}},
	{name: "update node/taint removed", objects: objs(node("node1", 1), pod("pod1", "node1", tol(1, 2))),
		steps: []step{updateNode(500*ms, node("node1"))}, want: map[string]outcome{"pod1": notDeleted}},
	{name: "update node/first of two tolerations runs out", objects: objs(node("node1"), pod("pod1", "node1", tol(1, 2), tol(2, 100))),
		steps: []step{updateNode(300*ms, node("node1", 1, 2))}, want: map[string]outcome{"pod1": deletedAt(2300 * ms)}},

	// TestUpdateNodeWithMultipleTaints
	{name: "multiple taints/infinitely and temporarily tolerated", objects: objs(node("node1"), pod("pod1", "node1", tol(1, -1), tol(2, 2))),
		steps: []step{updateNode(200*ms, node("node1", 1)), updateNode(400*ms, node("node1", 1, 2)), updateNode(800*ms, node("node1", 1))},
		want:  map[string]outcome{"pod1": notDeleted}},

	// TestUpdateNodeWithMultiplePods
	{name: "multiple pods/different toleration times", objects: objs(node("node1"), pod("pod1", "node1"), pod("pod2", "node1", tol(1, 2)), pod("pod3", "node1", tol(1, -1))),
		steps: []step{updateNode(300*ms, node("node1", 1))},
		want:  map[string]outcome{"pod1": deletedNow(300 * ms), "pod2": deletedAt(2300 * ms), "pod3": notDeleted}},
	{name: "multiple pods/none tolerates every taint", objects: objs(node("node1"), pod("pod1", "node1"), pod("pod2", "node1", tol(1, 2)), pod("pod3", "node1", tol(1, -1))),
		steps: []step{updateNode(300*ms, node("node1", 1, 2))},
		want:  map[string]outcome{"pod1": deletedNow(300 * ms), "pod2": deletedNow(300 * ms), "pod3": deletedNow(300 * ms)}},

	// TestEventualConsistency: a pod update arrives while the node update is processed.
	{name: "eventual consistency/existing pod scheduled onto tainted node", objects: objs(node("node1"), pod("pod1", "node1"), pod("pod2", "")),
		steps: []step{updateNode(300*ms, node("node1", 1)), updatePod(300*ms, pod("pod2", "node1"))},
		want:  map[string]outcome{"pod1": deletedNow(300 * ms), "pod2": deletedNow(300 * ms)}},
	{name: "eventual consistency/existing tolerating pod scheduled onto tainted node", objects: objs(node("node1"), pod("pod1", "node1"), pod("pod2", "", tol(1, 2))),
		steps: []step{updateNode(300*ms, node("node1", 1)), updatePod(300*ms, pod("pod2", "node1", tol(1, 2)))},
		want:  map[string]outcome{"pod1": deletedNow(300 * ms), "pod2": deletedAt(2300 * ms)}},
	{name: "eventual consistency/new pod on tainted node", objects: objs(node("node1"), pod("pod1", "node1")),
		steps: []step{updateNode(300*ms, node("node1", 1)), addPod(300*ms, pod("pod2", "node1"))},
		want:  map[string]outcome{"pod1": deletedNow(300 * ms), "pod2": deletedNow(300 * ms)}},
	{name: "eventual consistency/new tolerating pod on tainted node", objects: objs(node("node1"), pod("pod1", "node1")),
		steps: []step{updateNode(300*ms, node("node1", 1)), addPod(300*ms, pod("pod2", "node1", tol(1, 2)))},
		want:  map[string]outcome{"pod1": deletedNow(300 * ms), "pod2": deletedAt(2300 * ms)}},

	// Known bugs of kube's controller.
	{name: "kube bug/controller restarted mid-countdown", objects: objs(node("node1", 1), pod("pod1", "node1", tol(1, 3))),
		steps: []step{restart(2 * time.Second)},
		diff:  &difference{pod: "pod1", issue: "kubernetes#108268", kube: deletedAt(5 * time.Second), taintevict: deletedAt(3 * time.Second)}},
	{name: "kube bug/finished pod", objects: objs(node("node1"), finished(pod("pod1", "node1"))),
		steps: []step{updateNode(300*ms, node("node1", 1))},
		diff:  &difference{pod: "pod1", issue: "kubernetes#96363", kube: deletedNow(300 * ms), taintevict: notDeleted}},
	{name: "kube bug/terminating pod", objects: objs(node("node1"), terminating(pod("pod1", "node1"))),
		steps: []step{updateNode(300*ms, node("node1", 1))},
		diff:  &difference{pod: "pod1", issue: "kubernetes#96363", kube: deletedNow(300 * ms), taintevict: notDeleted}},
	// Every DELETE fails for the 2 s after the taint: kube tries 5 times, 10 ms apart, and
	// drops the eviction; taintevict retries with backoff (0.1 s doubling, less up to 20 %
	// jitter) and deletes the pod soon after the API server recovers.
	{name: "kube bug/DELETE fails for 2 s", objects: objs(node("node1"), pod("pod1", "node1")),
		steps: []step{updateNode(300*ms, node("node1", 1))}, failDeletesUntil: 2300 * ms,
		diff: &difference{pod: "pod1", issue: "kubernetes#140639", kube: notDeleted, taintevict: deletedNow(2300 * ms)}},
}
