package device

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/metrics"
)

// The scenarios of kube's own device taint eviction controller tests
// (pkg/controller/devicetainteviction/device_taint_eviction_test.go in k8s.io/kubernetes
// v1.37.2), played on a Controller over a fake clientset in a synctest bubble: what an
// operator sees (each pod's DELETE and its time, the requests, the Events, each
// DeviceTaintRule's EvictionInProgress condition and its lastTransitionTime), not kube's
// internal maps and queues. Each case is named after kube's.
//
// Kube's TestController feeds its handlers a list of events, in every order, and only then
// lets its worker run. Here the objects of a case's initial state exist when the controller
// starts, and those of its events are created at +0, once it has synced, in every order; the
// DeviceTaintRules among them last, in kube's order, since a running controller writes a
// rule's status as soon as it sees the rule (kube's too), and counts only the pods it has
// seen by then. A case whose initial state holds an eviction that is due but not yet done
// cannot be reached by a running controller, which evicts at once: there the claim
// tolerates the taint for a minute, the events come at +10 s, and the outcome is at +1m or
// never, which is the case's point.
//
// Where kube's expectations come from its harness, not from its controller, the port says
// so: TestController does not run the rule informer, so kube's controller does not see the
// status it wrote, and writes the same condition again a period later (a lastTransitionTime
// of +10 s); TestDeviceTaintRule, which runs the informers, shows it does not. Kube's two
// metrics are checked where kube's tests check them (TestEviction, TestDeviceTaintRule,
// TestCancelEviction, TestParallelPodDeletion, TestRetry: kube's testPodDeletionsMetrics,
// each deleted pod's latency from its deadline to its DELETE's answer), and in every case
// of TestController too, which kube does not check: one deletion counted for each pod
// deleted, each at its deadline.
//
// The differences that remain are intended, listed in the package documentation, and
// pinned by TestKubeDifferences.

// kubeCase is one case of kube's TestController.
type kubeCase struct {
	name    string
	opts    Options
	initial []runtime.Object // exist at the start
	first   []runtime.Object // created at +0, in every order
	then    []runtime.Object // created at +0 after first, in this order
	steps   []kubeStep
	deleted map[string]time.Duration // "namespace/name" -> when the controller deleted it; others never
	events  []string                 // "namespace/name: message", in any order
	rules   []ruleAt                 // the rules' conditions, checked at these times
}

// kubeStep changes the cluster at a time since the start.
type kubeStep struct {
	at time.Duration
	do func(k *kubeRig)
}

// ruleAt is a rule's EvictionInProgress condition at a time: status, reason and message,
// and its lastTransitionTime since the start.
type ruleAt struct {
	at                      time.Duration
	rule                    string
	status, reason, message string
	ltt                     time.Duration
}

func pending(at time.Duration, rule string, msg string, ltt time.Duration) ruleAt {
	return ruleAt{at, rule, "True", ReasonPodsPendingEviction, msg, ltt}
}

func completed(at time.Duration, rule string, msg string, ltt time.Duration) ruleAt {
	return ruleAt{at, rule, "False", ReasonCompleted, msg, ltt}
}

func noEffect(rule string, msg string) ruleAt {
	return ruleAt{0, rule, "False", ReasonNoEffect, msg + " if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update.", 0}
}

const (
	onePending  = "1 pod needs to be evicted in 1 namespace."
	oneEvicted  = "1 pod evicted since starting the controller."
	twoEvicted  = "2 pods evicted since starting the controller."
	marking     = "Marking for deletion"
	cancelling  = "Cancelling deletion"
	period      = DefaultStatusPeriod
	neverAfter  = 2 * time.Hour // how long a case runs
	minute      = time.Minute
	tenSeconds  = 10 * time.Second
	myPod       = kNS + "/" + kPod
	myPodOther  = kNS + "/" + kPod + "-other"
	myPodOtherN = kNS + "-other/" + kPod
)

func kCreateAt(at time.Duration, objs ...runtime.Object) kubeStep {
	return kubeStep{at, func(k *kubeRig) {
		for _, o := range objs {
			k.write("create", o)
		}
	}}
}

func kUpdateAt(at time.Duration, objs ...runtime.Object) kubeStep {
	return kubeStep{at, func(k *kubeRig) {
		for _, o := range objs {
			k.write("update", o)
		}
	}}
}

func kDeleteAt(at time.Duration, objs ...runtime.Object) kubeStep {
	return kubeStep{at, func(k *kubeRig) {
		for _, o := range objs {
			k.write("delete", o)
		}
	}}
}

// kubeCases are the cases of kube's TestController, each as its name says. Left out, since
// they check only kube's internal maps: empty, populate-pools, update-pools,
// untainted-claim, tainted-claim-through-resourceslice.
var kubeCases = []kubeCase{
	{name: "rule-status", then: objs(kRuleEvict()),
		rules: []ruleAt{{0, "evict", "False", ReasonNotStarted, "", 0}}},
	{name: "tainted-claim-through-rule", first: objs(kInUse()), then: objs(kRuleEvict()),
		rules: []ruleAt{{0, "evict", "False", ReasonNotStarted, "", 0}}},
	{name: "evict-pod-resourceclaim", first: objs(kSliceTainted(), kSlice2(), kInUse(), kPodWithClaim()),
		deleted: map[string]time.Duration{myPod: 0}, events: []string{myPod + ": " + marking}},
	{name: "evict-pod-resourceclaim-podgroup", opts: Options{PodGroups: PodGroupsOn},
		first:   objs(kSliceTainted(), kSlice2(), kInUseByGroup(), inKGroup(kPodWithClaim())),
		deleted: map[string]time.Duration{myPod: 0}, events: []string{myPod + ": " + marking}},
	{name: "no-evict-pod-in-podgroup-without-claim", opts: Options{PodGroups: PodGroupsOn},
		first: objs(kSliceTainted(), kSlice2(), kInUseByGroup(), inKGroup(kPodObj(kNS, kPod, kPodUID, kNode)))},
	{name: "evict-pod-rule", first: objs(kInUse(), kPodWithClaim()), then: objs(kRuleEvict()),
		deleted: map[string]time.Duration{myPod: 0}, events: []string{myPod + ": " + marking},
		rules: []ruleAt{pending(0, "evict", onePending, 0), completed(period, "evict", oneEvicted, period)}},
	{name: "evict-pod-rule-later", first: objs(kInUse(kTolerating()), kPodWithClaim()), then: objs(kRuleEvict()),
		deleted: map[string]time.Duration{myPod: kTolerated * time.Second}, events: []string{myPod + ": " + marking},
		rules: []ruleAt{
			pending(0, "evict", onePending, 0),
			pending(period, "evict", onePending, 0), // kube's harness: +10 s, see the file's comment
			pending(kTolerated*time.Second, "evict", onePending, 0),
			completed(kTolerated*time.Second+period, "evict", oneEvicted, kTolerated*time.Second+period)}},
	{name: "evict-many-pods-many-namespaces", first: objs(kInUse(), kPodWithClaim(), kInUseOtherNS(), kPodObj(kNS+"-other", kPod, kPodUID+"-2", kNode, kClaim)),
		then:    objs(kRuleEvict()),
		deleted: map[string]time.Duration{myPod: 0, myPodOtherN: 0}, events: []string{myPod + ": " + marking, myPodOtherN + ": " + marking},
		rules: []ruleAt{pending(0, "evict", "2 pods need to be evicted in 2 different namespaces.", 0),
			completed(period, "evict", twoEvicted, period)}},
	{name: "evict-many-pods-same-namespace", first: objs(kInUse(), kPodWithClaim(), kInUseOtherName(false), kPodObj(kNS, kPod+"-other", kPodUID+"-3", kNode, kClaim+"-other")),
		then:    objs(kRuleEvict()),
		deleted: map[string]time.Duration{myPod: 0, myPodOther: 0}, events: []string{myPod + ": " + marking, myPodOther + ": " + marking},
		rules: []ruleAt{pending(0, "evict", "2 pods need to be evicted in 1 namespace.", 0),
			completed(period, "evict", twoEvicted, period)}},
	{name: "none-pod-rule", first: objs(kSlice(), kInUse(), kPodWithClaim()), then: objs(kRuleNone()),
		rules: []ruleAt{noEffect("evict", "3 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace")}},
	{name: "none-many-pods-many-namespaces", first: objs(kInUse(), kPodWithClaim(), kInUseOtherNS(), kPodObj(kNS+"-other", kPod, kPodUID+"-2", kNode, kClaim)),
		then:  objs(kRuleNone()),
		rules: []ruleAt{noEffect("evict", "0 published devices selected. 3 allocated devices selected. 2 pods would be evicted in 2 different namespaces")}},
	{name: "none-many-pods-same-namespace", first: objs(kInUse(), kPodWithClaim(), kInUseOtherName(false), kPodObj(kNS, kPod+"-other", kPodUID+"-3", kNode, kClaim+"-other")),
		then:  objs(kRuleNone()),
		rules: []ruleAt{noEffect("evict", "0 published devices selected. 3 allocated devices selected. 2 pods would be evicted in 1 namespace")}},
	{name: "none-podgroup-rule", opts: Options{PodGroups: PodGroupsOn}, first: objs(kSlice(), kInUseByGroup(), inKGroup(kPodWithClaim())), then: objs(kRuleNone()),
		rules: []ruleAt{noEffect("evict", "3 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace")}},
	{name: "multiple-claims-same-rule", first: objs(kInUse(), kInUseOtherName(true), kPodObj(kNS, kPod, kPodUID, kNode, kClaim, kClaim+"-other")),
		then:    objs(kRuleEvict()),
		deleted: map[string]time.Duration{myPod: 0}, events: []string{myPod + ": " + marking},
		rules: []ruleAt{pending(0, "evict", onePending, 0), completed(period, "evict", oneEvicted, period)}},
	// Kube's order-1 and order-2 differ only in the order in which its worker handled the
	// rules and the pod (order-1 writes evict-instance-no-execute's status after the pod's
	// eviction: Completed at +0). Both rules exist when the controller starts here, so that
	// it counts both before it evicts, as kube's order-2 does; the eviction counts for both
	// (evict-instance-no-execute's taint, added at +40 s, is among its reasons).
	{name: "multiple-claims-different-rules-order-1 and -2",
		initial: objs(kInUse(), kInUseOtherName(true), kPodObj(kNS, kPod, kPodUID, kNode, kClaim, kClaim+"-other"), kRuleInstance1(), kRuleInstance2Later()),
		deleted: map[string]time.Duration{myPod: 0}, events: []string{myPod + ": " + marking},
		rules: []ruleAt{pending(0, "evict-instance", onePending, 0), pending(0, "evict-instance-no-execute", onePending, 0),
			completed(period, "evict-instance", oneEvicted, period), completed(period, "evict-instance-no-execute", oneEvicted, period)}},
	{name: "evict-pod-resourceclaim-again (the slice removed and added again at +10 s)",
		initial: objs(kPodWithClaim(), kSliceTainted(), kSlice2(), kInUse(tolerateFor("", resourcev1.DeviceTolerationOpExists, "", 60))),
		steps:   []kubeStep{kDeleteAt(tenSeconds, kSliceTainted()), kCreateAt(tenSeconds, kSliceTainted())},
		deleted: map[string]time.Duration{myPod: minute}, events: []string{myPod + ": " + cancelling, myPod + ": " + marking}},
	{name: "evict-pod-after-scheduling",
		initial: objs(kPodObj(kNS, kPod, kPodUID, "", kClaim), kSliceTainted(), kSlice2(), kInUse()),
		steps:   []kubeStep{kUpdateAt(5*time.Second, kPodWithClaim())},
		deleted: map[string]time.Duration{myPod: 5 * time.Second}, events: []string{myPod + ": " + marking}},
	{name: "evict-pod-resourceclaim-unrelated-changes (at +10 s)",
		initial: objs(kPodWithClaim(), kSliceTainted(), kSlice2(), kInUse(tolerateFor("", resourcev1.DeviceTolerationOpExists, "", 60))),
		steps:   []kubeStep{kUpdateAt(tenSeconds, kSliceTainted(addTaintedCopy), kInUse(tolerateFor("", resourcev1.DeviceTolerationOpExists, "", 60)), kPodWithClaim())},
		deleted: map[string]time.Duration{myPod: minute}, events: []string{myPod + ": " + marking}},
	{name: "evict-pod-resourceclaimtemplate", first: objs(kSliceTainted(), kSlice2(), kInUse(), kPodFromTemplate(true, ptrTo(kClaim))),
		deleted: map[string]time.Duration{myPod: 0}, events: []string{myPod + ": " + marking}},
	{name: "evict-pod-extended-resourceclaim", first: objs(kSliceTainted(), kSlice2(), kInUse(), kPodExtended()),
		deleted: map[string]time.Duration{myPod: 0}, events: []string{myPod + ": " + marking}},
	{name: "evict-pod-extended-resourceclaim-status-update",
		initial: objs(kPodObj(kNS, kPod, kPodUID, kNode), kSliceTainted(), kSlice2(), kInUse()),
		steps:   []kubeStep{kUpdateAt(5*time.Second, kPodExtended())},
		deleted: map[string]time.Duration{myPod: 5 * time.Second}, events: []string{myPod + ": " + marking}},
	{name: "no-evict-extended-resourceclaim-wrong-owner", first: objs(kSliceTainted(), kSlice2(), kInUseOld(), kPodExtended())},
	{name: "evict-pod-later", first: objs(kSliceTainted(), kSlice2(), kInUse(kTolerating()), kPodWithClaim()),
		deleted: map[string]time.Duration{myPod: kTolerated * time.Second}, events: []string{myPod + ": " + marking}},
	{name: "evict-pod-later-many", first: objs(kSliceTainted(), kSlice2(), kInUse(
		tolerateFor(kTaintKey+"-other", resourcev1.DeviceTolerationOpEqual, kTaintVal, 20),
		tolerateFor("", resourcev1.DeviceTolerationOpExists, "", 60),
		tolerateFor("", resourcev1.DeviceTolerationOpExists, "", 30)), kPodWithClaim()),
		deleted: map[string]time.Duration{myPod: 30 * time.Second}, events: []string{myPod + ": " + marking}},
	{name: "evict-pod-toleration-mismatch", first: objs(kSliceTainted(), kSlice2(), kInUse(tolerateFor(kTaintKey+"-other", resourcev1.DeviceTolerationOpEqual, kTaintVal, 60)), kPodWithClaim()),
		deleted: map[string]time.Duration{myPod: 0}, events: []string{myPod + ": " + marking}},
	{name: "no-evict-pod-toleration-forever", first: objs(kSliceTainted(), kSlice2(), kInUse(tolerateFor("", resourcev1.DeviceTolerationOpExists, "", -1)), kPodWithClaim())},
	{name: "no-evict-pod-toleration-forever-many", first: objs(kSliceTainted(), kSlice2(), kInUse(
		tolerateFor("", resourcev1.DeviceTolerationOpExists, "", 60), tolerateFor("", resourcev1.DeviceTolerationOpExists, "", -1)), kPodWithClaim())},
	{name: "evict-pod-partial-toleration", first: objs(kSlice(taintInstance(twoTaints()...)), kSlice2(), kInUse(tolerateFor(kTaintKey, resourcev1.DeviceTolerationOpExists, "", -1)), kPodWithClaim()),
		deleted: map[string]time.Duration{myPod: 0}, events: []string{myPod + ": " + marking}},
	{name: "evict-pod-many-taints",
		first: objs(kSlice(taintInstance(twoTaints()...)), kSlice2(), kInUse(
			tolerateFor(kTaintKey, resourcev1.DeviceTolerationOpExists, "", 60), tolerateFor(kTaintKey+"-other", resourcev1.DeviceTolerationOpExists, "", 30)), kPodWithClaim()),
		then:    objs(kRuleEvict(), kRuleOther()),
		deleted: map[string]time.Duration{myPod: 30 * time.Second}, events: []string{myPod + ": " + marking},
		rules: []ruleAt{pending(0, "evict", onePending, 0), pending(0, "evict-other", onePending, 0),
			pending(period, "evict", onePending, 0), pending(period, "evict-other", onePending, 0), // kube's harness: +10 s
			completed(30*time.Second+period, "evict", oneEvicted, 30*time.Second+period), completed(30*time.Second+period, "evict-other", oneEvicted, 30*time.Second+period)}},
	{name: "no-evict-pod-not-scheduled", first: objs(kSliceTainted(), kSlice2(), kInUse(), kPodObj(kNS, kPod, kPodUID, "", kClaim))},
	{name: "no-evict-no-taint", first: objs(kSlice(untaintOthers), kInUse(), kPodWithClaim())},
	{name: "no-evict-no-taint-update", initial: objs(kPodWithClaim(), kSlice(untaintOthers), kInUse()),
		steps: []kubeStep{kUpdateAt(0, kSlice(untaintOthers))}},
	{name: "no-evict-pod-resourceclaimtemplate-no-status", first: objs(kSliceTainted(), kSlice2(), kInUse(), kPodFromTemplate(false, nil))},
	{name: "no-evict-pod-resourceclaimtemplate-no-claim", first: objs(kSliceTainted(), kSlice2(), kInUse(), kPodFromTemplate(true, nil))},
	{name: "no-evict-other-device", first: objs(kSlice(renameDevices), kSlice2(), kInUse(), kPodFromTemplate(true, ptrTo(kClaim)))},
	{name: "no-evict-wrong-pod", first: objs(kSliceTainted(), kSlice2(), kInUse(), kPodObj(kNS, kPod, kPodUID+"-other", kNode, kClaim))},
	{name: "evict-wrong-pod-replaced",
		initial: objs(kPodObj(kNS, kPod, kPodUID+"-other", kNode, kClaim), kSliceTainted(), kSlice2(), kInUse()),
		steps:   []kubeStep{kDeleteAt(5*time.Second, kPodWithClaim()), kCreateAt(5*time.Second, kPodWithClaim())},
		deleted: map[string]time.Duration{myPod: 5 * time.Second}, events: []string{myPod + ": " + marking}},
	{name: "cancel-eviction-remove-taint (at +10 s)", initial: tolerated(kPodFromTemplate(true, ptrTo(kClaim))),
		steps: []kubeStep{kUpdateAt(tenSeconds, kSlice())}, events: []string{myPod + ": " + cancelling}},
	{name: "cancel-eviction-reduce-taint (at +10 s)", initial: tolerated(kPodFromTemplate(true, ptrTo(kClaim))),
		steps: []kubeStep{kUpdateAt(tenSeconds, kSliceTainted(setEffect(resourcev1.DeviceTaintEffectNoSchedule)))}, events: []string{myPod + ": " + cancelling}},
	{name: "ignore-none-effect", initial: objs(kPodFromTemplate(true, ptrTo(kClaim)), kSliceTainted(setEffect(resourcev1.DeviceTaintEffectNone)), kSlice2(), kInUse())},
	{name: "ignore-unknown-effect", initial: objs(kPodFromTemplate(true, ptrTo(kClaim)), kSliceTainted(setEffect("unknown-effect")), kSlice2(), kInUse())},
	{name: "eviction-change-taint (at +10 s)",
		initial: objs(kPodFromTemplate(true, ptrTo(kClaim)), kSliceTainted(), kSlice2(), kInUse(kTolerating())),
		steps:   []kubeStep{kUpdateAt(tenSeconds, kSliceTainted(taintOtherValue))},
		deleted: map[string]time.Duration{myPod: tenSeconds}, events: []string{myPod + ": " + marking}},
	{name: "cancel-eviction-remove-taint-in-new-slice (at +10 s)", initial: tolerated(kPodFromTemplate(true, ptrTo(kClaim))),
		steps:  []kubeStep{kDeleteAt(tenSeconds, kSliceTainted()), kCreateAt(tenSeconds, kSlice(nextGeneration(1, "-updated")))},
		events: []string{myPod + ": " + cancelling}},
	{name: "cancel-eviction-remove-slice (at +10 s)", initial: tolerated(kPodFromTemplate(true, ptrTo(kClaim))),
		steps: []kubeStep{kDeleteAt(tenSeconds, kSliceTainted())}, events: []string{myPod + ": " + cancelling}},
	{name: "cancel-eviction-pod-deletion (at +10 s)", initial: tolerated(kPodWithClaim()),
		steps: []kubeStep{kDeleteAt(tenSeconds, kPodWithClaim())}},
	{name: "no-evict-wrong-resourceclaim", first: objs(kSliceTainted(), kSlice2(), kInUseOld(), kPodFromTemplate(true, ptrTo(kClaim)))},
	{name: "evict-wrong-resourceclaim-replaced",
		initial: objs(kPodFromTemplate(true, ptrTo(kClaim)), kSliceTainted(), kSlice2(), kInUseOld()),
		steps:   []kubeStep{kUpdateAt(5*time.Second, kInUse())},
		deleted: map[string]time.Duration{myPod: 5 * time.Second}, events: []string{myPod + ": " + marking}},
	{name: "no-evict-resourceclaim-deallocated (at +10 s)", initial: tolerated(kPodFromTemplate(true, ptrTo(kClaim))),
		steps: []kubeStep{kUpdateAt(tenSeconds, owner(kClaimObj(kNS, kClaim), "Pod", kPod, kPodUID))}, events: []string{myPod + ": " + cancelling}},
	{name: "no-evict-resourceclaim-deleted (at +10 s)", initial: tolerated(kPodFromTemplate(true, ptrTo(kClaim))),
		steps: []kubeStep{kDeleteAt(tenSeconds, kInUse())}, events: []string{myPod + ": " + cancelling}},
}

func objs(o ...runtime.Object) []runtime.Object { return o }

// twoTaints are kube's taint1 and taint2: NoExecute, keys example.com/taint and
// example.com/taint-other, no value.
func twoTaints() []resourcev1.DeviceTaint {
	a, b := kTaint(), kTaint()
	a.Value, b.Value, b.Key = "", "", kTaintKey+"-other"
	return []resourcev1.DeviceTaint{a, b}
}

func taintOtherValue(s *resourcev1.ResourceSlice) { s.Spec.Devices[0].Taints[0].Value += "-other" }

// tolerated is kube's initial state of a pod whose eviction is due, with the claim
// tolerating the taint for a minute: the cluster with pod on the tainted slice.
func tolerated(pod *v1.Pod) []runtime.Object {
	return objs(pod, kSliceTainted(), kSlice2(), kInUse(tolerateFor("", resourcev1.DeviceTolerationOpExists, "", 60)))
}

// TestKubeController plays kubeCases, each in every order of its first objects.
func TestKubeController(t *testing.T) {
	for _, tc := range kubeCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, order := range permutations(len(tc.first)) {
				name := strings.Trim(fmt.Sprint(order), "[]")
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) { tc.play(t, order) })
				})
			}
		})
	}
}

// permutations returns every order of 0..n-1; one empty order for n = 0.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{nil}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

// play plays the case in the current bubble, with its first objects in order.
func (tc kubeCase) play(t *testing.T, order []int) {
	k := newKubeRig(t, tc.opts, nil, tc.initial...)
	for _, i := range order {
		k.write("create", tc.first[i])
	}
	for _, o := range tc.then {
		k.write("create", o)
	}
	times := []time.Duration{0}
	for _, s := range tc.steps {
		times = append(times, s.at)
	}
	for _, r := range tc.rules {
		times = append(times, r.at)
	}
	slices.Sort(times)
	for _, at := range slices.Compact(times) {
		k.sleepUntil(at)
		for _, s := range tc.steps {
			if s.at == at {
				s.do(k)
			}
		}
		for _, r := range tc.rules {
			if r.at == at {
				k.checkRule(r)
			}
		}
	}
	k.sleepUntil(neverAfter)
	if got := k.deletedAt(); !maps.Equal(got, orEmpty(tc.deleted)) {
		t.Errorf("got pods deleted at %v, want %v", got, orEmpty(tc.deleted))
	}
	k.checkMetrics(make([]time.Duration, len(tc.deleted))...) // each at its deadline
	if got, want := k.events(), slices.Sorted(slices.Values(tc.events)); !slices.Equal(got, want) {
		t.Errorf("got Events %q, want %q", got, want)
	}
}

func orEmpty[M ~map[K]V, K comparable, V any](m M) M {
	if m == nil {
		return M{}
	}
	return m
}

// kubeRig is a Controller on a fake clientset in a synctest bubble, that notes each
// request about pods and when the first DELETE of each came.
type kubeRig struct {
	t      *testing.T
	client *fake.Clientset
	c      *Controller
	reg    *prometheus.Registry // the controller's metrics
	start  time.Time

	mu       sync.Mutex
	deletes  map[string]time.Duration
	requests []string // "verb[/subresource] namespace/name" of pods
}

// newKubeRig starts a Controller with opts on a fake clientset holding objs; wrap, if not
// nil, wraps the client the controller gets (and may add reactors: they run after the one
// that notes the requests). The controller keeps its metrics on k.reg. It returns once the
// controller has synced and is idle.
func newKubeRig(t *testing.T, opts Options, wrap func(kubernetes.Interface) kubernetes.Interface, objs ...runtime.Object) *kubeRig {
	t.Helper()
	k := &kubeRig{t: t, client: fake.NewClientset(objs...), reg: prometheus.NewPedanticRegistry(), start: time.Now(), deletes: map[string]time.Duration{}}
	opts.Metrics = metrics.NewMeter(k.reg)
	var client kubernetes.Interface = k.client
	if wrap != nil {
		client = wrap(client)
	}
	k.client.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := ""
		if n, ok := a.(interface{ GetName() string }); ok {
			name = n.GetName()
		}
		verb := a.GetVerb()
		if a.GetSubresource() != "" {
			verb += "/" + a.GetSubresource()
		}
		if verb == "list" || verb == "watch" {
			return false, nil, nil
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		k.requests = append(k.requests, verb+" "+a.GetNamespace()+"/"+name)
		if _, ok := k.deletes[a.GetNamespace()+"/"+name]; verb == "delete" && !ok {
			k.deletes[a.GetNamespace()+"/"+name] = time.Since(k.start)
		}
		return false, nil, nil
	})
	c, err := NewController(t.Context(), client, clientgo.NewFactory(k.client), opts)
	if err != nil {
		t.Fatal(err)
	}
	k.c = c
	runInBackground(t, c.Run)
	<-c.Synced()
	synctest.Wait()
	return k
}

// write creates, updates or deletes obj through the fake clientset's tracker, which sends
// the watch events as the clientset's requests would, without the reactors that note the
// controller's requests; then it waits until the controller is idle.
func (k *kubeRig) write(verb string, obj runtime.Object) {
	k.t.Helper()
	m := obj.(metav1.Object)
	ns, name := m.GetNamespace(), m.GetName()
	var gvr schema.GroupVersionResource
	switch obj.(type) {
	case *v1.Pod:
		gvr = v1.SchemeGroupVersion.WithResource("pods")
	case *resourcev1.ResourceClaim:
		gvr = resourcev1.SchemeGroupVersion.WithResource("resourceclaims")
	case *resourcev1.ResourceSlice:
		gvr = resourcev1.SchemeGroupVersion.WithResource("resourceslices")
	case *resourcev1.DeviceTaintRule:
		gvr = resourcev1.SchemeGroupVersion.WithResource("devicetaintrules")
	default:
		k.t.Fatalf("cannot %s a %T", verb, obj)
	}
	tr := k.client.Tracker()
	var err error
	switch verb {
	case "create":
		err = tr.Create(gvr, obj, ns)
	case "update":
		err = tr.Update(gvr, obj, ns)
	case "delete":
		err = tr.Delete(gvr, ns, name)
	}
	if err != nil {
		k.t.Fatalf("%s %s/%s: %v", verb, ns, name, err)
	}
	synctest.Wait()
}

func (k *kubeRig) sleepUntil(d time.Duration) {
	if w := d - time.Since(k.start); w > 0 {
		time.Sleep(w)
	}
	synctest.Wait()
}

func (k *kubeRig) deletedAt() map[string]time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.deletes)
}

// podRequests returns the controller's requests about pods, as "verb[/subresource] ns/name".
func (k *kubeRig) podRequests() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.requests)
}

// events returns the Events of every namespace, as "namespace/name: message", sorted; each
// must be the device controller's, on the pod's UID.
func (k *kubeRig) events() []string {
	k.t.Helper()
	return podEvents(k.t, k.client, "", func(e v1.Event) string { return e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name })
}

// kubeBuckets are the buckets of kube's device_taint_eviction_controller_pod_deletion_duration_seconds.
var kubeBuckets = []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240}

// checkMetrics is kube's testPodDeletionsMetrics: kube's two metrics of the device side,
// under kube's names and HELP lines, count one deletion for each of latencies, the time
// from a pod's deadline to its DELETE's answer, in kube's buckets.
func (k *kubeRig) checkMetrics(latencies ...time.Duration) {
	k.t.Helper()
	var sum time.Duration
	for _, l := range latencies {
		sum += l
	}
	var b strings.Builder
	// kube's HELP lines, written out as kube-controller-manager serves them (its test's
	// expected text), not built from KubeMetrics: a drift of ours from kube's shows here.
	b.WriteString("# HELP device_taint_eviction_controller_pod_deletion_duration_seconds [ALPHA] Latency, in seconds, between the time when a device taint effect has been activated and a Pod's deletion via DeviceTaintEvictionController.\n")
	b.WriteString("# TYPE device_taint_eviction_controller_pod_deletion_duration_seconds histogram\n")
	for _, le := range kubeBuckets {
		n := 0
		for _, l := range latencies {
			if l.Seconds() <= le {
				n++
			}
		}
		fmt.Fprintf(&b, "device_taint_eviction_controller_pod_deletion_duration_seconds_bucket{le=\"%g\"} %d\n", le, n)
	}
	fmt.Fprintf(&b, "device_taint_eviction_controller_pod_deletion_duration_seconds_bucket{le=\"+Inf\"} %d\n", len(latencies))
	fmt.Fprintf(&b, "device_taint_eviction_controller_pod_deletion_duration_seconds_sum %g\n", sum.Seconds())
	fmt.Fprintf(&b, "device_taint_eviction_controller_pod_deletion_duration_seconds_count %d\n", len(latencies))
	b.WriteString("# HELP device_taint_eviction_controller_pod_deletions_total [ALPHA] Total number of Pods deleted by DeviceTaintEvictionController since its start.\n")
	b.WriteString("# TYPE device_taint_eviction_controller_pod_deletions_total counter\n")
	fmt.Fprintf(&b, "device_taint_eviction_controller_pod_deletions_total %d\n", len(latencies))
	if err := testutil.GatherAndCompare(k.reg, strings.NewReader(b.String()),
		"device_taint_eviction_controller_pod_deletion_duration_seconds", "device_taint_eviction_controller_pod_deletions_total"); err != nil {
		k.t.Errorf("kube's metrics: %v", err)
	}
}

// outcomes returns taintevict_evictions_total of the device side, as "outcome/reason n".
func (k *kubeRig) outcomes() []string {
	k.t.Helper()
	fams, err := k.reg.Gather()
	if err != nil {
		k.t.Fatal(err)
	}
	var out []string
	for _, f := range fams {
		if f.GetName() != "taintevict_evictions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["controller"] != "device" {
				k.t.Errorf("taintevict_evictions_total with the controller label %q, want device", l["controller"])
			}
			out = append(out, fmt.Sprintf("%s/%s %g", l["outcome"], l["reason"], m.GetCounter().GetValue()))
		}
	}
	slices.Sort(out)
	return out
}

// checkRule checks a rule's condition.
func (k *kubeRig) checkRule(want ruleAt) {
	k.t.Helper()
	rule, err := k.client.ResourceV1().DeviceTaintRules().Get(k.t.Context(), want.rule, metav1.GetOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	var got ruleAt
	got.at, got.rule = want.at, want.rule
	for _, c := range rule.Status.Conditions {
		if c.Type == resourcev1.DeviceTaintConditionEvictionInProgress {
			got.status, got.reason, got.message, got.ltt = string(c.Status), c.Reason, c.Message, c.LastTransitionTime.Sub(k.start)
		}
	}
	if got != want {
		k.t.Errorf("at +%v, rule %s: got %s %s %q since +%v, want %s %s %q since +%v", want.at, want.rule,
			got.status, got.reason, got.message, got.ltt, want.status, want.reason, want.message, want.ltt)
	}
}

// TestKubeEviction is kube's TestEviction: a controller that runs, with the tainted
// cluster there at the start, made by creates, by updates, or by deletes (a newer untainted
// slice of the pool and an unallocated claim removed, the claim made again allocated),
// evicts the pod at +0: kube's DisruptionTarget condition, then the DELETE; kube's
// "Marking for deletion" Event. Kube makes three requests (a GET first); this controller
// makes the status patch and the DELETE, no GET (a listed difference).
func TestKubeEviction(t *testing.T) {
	for _, tc := range []struct {
		name    string
		initial []runtime.Object
		steps   []kubeStep
	}{
		{"initial", objs(kSliceTainted(), kInUse(), kPodWithClaim()), nil},
		{"add", nil, []kubeStep{kCreateAt(0, kPodWithClaim(), kSliceTainted(), kInUse())}},
		{"update", objs(kSlice(), kClaimObj(kNS, kClaim), kPodObj(kNS, kPod, kPodUID, "", kClaim)),
			[]kubeStep{kUpdateAt(0, kPodWithClaim(), kSliceTainted(), kInUse())}},
		{"delete", objs(kSliceTainted(), kSlice(nextGeneration(100, "-other")), kClaimObj(kNS, kClaim), kPodWithClaim()),
			[]kubeStep{kDeleteAt(0, kSlice(nextGeneration(100, "-other")), kClaimObj(kNS, kClaim)), kCreateAt(0, kInUse())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var patched *v1.Pod
				k := newKubeRig(t, Options{}, func(c kubernetes.Interface) kubernetes.Interface {
					f := c.(*fake.Clientset)
					f.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
						if obj, err := f.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), kNS, kPod); err == nil {
							patched = obj.(*v1.Pod)
						}
						return false, nil, nil
					})
					return c
				}, tc.initial...)
				for _, s := range tc.steps {
					s.do(k)
				}
				k.sleepUntil(time.Second)
				if got, want := k.podRequests(), []string{"patch/status " + myPod, "delete " + myPod}; !slices.Equal(got, want) {
					t.Errorf("got requests %q, want %q", got, want)
				}
				if got := k.deletedAt(); !maps.Equal(got, map[string]time.Duration{myPod: 0}) {
					t.Errorf("got pods deleted at %v, want %s at +0", got, myPod)
				}
				var c *v1.PodCondition
				if patched != nil {
					for i := range patched.Status.Conditions {
						if patched.Status.Conditions[i].Type == v1.DisruptionTarget {
							c = &patched.Status.Conditions[i]
						}
					}
				}
				if c == nil || c.Status != v1.ConditionTrue || c.Reason != DisruptionReason || c.Message != DisruptionMessage {
					t.Errorf("got the pod's condition %+v when it was deleted, want DisruptionTarget=True, %s, %q", c, DisruptionReason, DisruptionMessage)
				}
				if got, want := k.events(), []string{myPod + ": " + marking}; !slices.Equal(got, want) {
					t.Errorf("got Events %q, want %q", got, want)
				}
				k.checkMetrics(0)
				if got, want := k.outcomes(), []string{"succeeded/delete 1"}; !slices.Equal(got, want) {
					t.Errorf("got outcomes %q, want %q", got, want)
				}
			})
		})
	}
}

// slowDeletes delays every DELETE of a pod by delay, on the bubble's clock, as kube's
// TestDeviceTaintRule/slow holds its DELETE 3 s.
type slowDeletes struct {
	kubernetes.Interface
	delay time.Duration
}

func (s slowDeletes) CoreV1() corev1client.CoreV1Interface {
	return slowCoreV1{s.Interface.CoreV1(), s.delay}
}

type slowCoreV1 struct {
	corev1client.CoreV1Interface
	delay time.Duration
}

func (s slowCoreV1) Pods(ns string) corev1client.PodInterface {
	return slowPods{s.CoreV1Interface.Pods(ns), s.delay}
}

type slowPods struct {
	corev1client.PodInterface
	delay time.Duration
}

func (s slowPods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	time.Sleep(s.delay)
	return s.PodInterface.Delete(ctx, name, opts)
}

// TestKubeDeviceTaintRule is kube's TestDeviceTaintRule: a rule of effect None says what it
// would evict; at +20 s it becomes NoExecute (added then), its status says so at once, and
// the pod goes at once (immediate), or when its toleration of 30 s runs out (delayed), or
// 3 s later still, its DELETE being slow (slow); the status says Completed a period after
// the DELETE returned, as kube writes it (+30 s, +60 s, +63 s). Deleting the rule forgets
// its counts.
func TestKubeDeviceTaintRule(t *testing.T) {
	for _, tc := range []struct {
		name        string
		tolerate    bool
		slow        time.Duration
		deleted     time.Duration // when the DELETE comes to the server
		completedAt time.Duration
	}{
		{"immediate", false, 0, 20 * time.Second, 30 * time.Second},
		{"delayed", true, 0, 50 * time.Second, 60 * time.Second},
		{"slow", true, 3 * time.Second, 53 * time.Second, 63 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				claim := kInUse()
				if tc.tolerate {
					claim = kInUse(resourcev1.DeviceToleration{Value: kTaintVal, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: ptrTo[int64](30)})
				}
				var wrap func(kubernetes.Interface) kubernetes.Interface
				if tc.slow > 0 {
					wrap = func(c kubernetes.Interface) kubernetes.Interface { return slowDeletes{c, tc.slow} }
				}
				k := newKubeRig(t, Options{}, wrap, kPodWithClaim(), claim, kRuleNone())
				k.checkRule(noEffect("evict", "0 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace"))
				k.sleepUntil(20 * time.Second)
				rule := kRule("evict", "1234", byDriver(), resourcev1.DeviceTaintEffectNoExecute, 20)
				rule.Status = k.ruleStatus("evict")
				k.write("update", rule)
				k.checkRule(pending(20*time.Second, "evict", onePending, 20*time.Second))
				k.sleepUntil(tc.deleted)
				k.checkRule(pending(tc.deleted, "evict", onePending, 20*time.Second))
				k.sleepUntil(tc.completedAt - time.Nanosecond)
				k.checkRule(pending(tc.completedAt-time.Nanosecond, "evict", onePending, 20*time.Second))
				k.sleepUntil(tc.completedAt)
				k.checkRule(completed(tc.completedAt, "evict", oneEvicted, tc.completedAt))
				if got := k.deletedAt(); !maps.Equal(got, map[string]time.Duration{myPod: tc.deleted}) {
					t.Errorf("got pods deleted at %v, want %s at +%v", got, myPod, tc.deleted)
				}
				k.c.status.mu.Lock()
				counted := len(k.c.status.evicted)
				k.c.status.mu.Unlock()
				if counted != 1 {
					t.Errorf("got evictions counted for %d rules, want 1", counted)
				}
				k.write("delete", rule)
				k.c.status.mu.Lock()
				counted = len(k.c.status.evicted)
				k.c.status.mu.Unlock()
				if counted != 0 {
					t.Errorf("got evictions counted for %d rules after the rule was deleted, want none", counted)
				}
				if got, want := k.events(), []string{myPod + ": " + marking}; !slices.Equal(got, want) {
					t.Errorf("got Events %q, want %q", got, want)
				}
				k.checkMetrics(tc.slow) // the slow DELETE's 3 s show in the histogram, as in kube's
			})
		})
	}
}

// ruleStatus returns the status the rule has now, so that the test's own update keeps it,
// as a real API server keeps the status across an update of the spec.
func (k *kubeRig) ruleStatus(name string) resourcev1.DeviceTaintRuleStatus {
	k.t.Helper()
	rule, err := k.client.ResourceV1().DeviceTaintRules().Get(k.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	return rule.Status
}

// TestKubeCancelEviction is kube's TestCancelEviction: a pod whose claim tolerates the taint
// for a minute is deleted by someone else at +10 s (no Event, no request of the
// controller's), or its slice is (the eviction is cancelled: "Cancelling deletion").
func TestKubeCancelEviction(t *testing.T) {
	for _, podDeleted := range []bool{true, false} {
		t.Run(map[bool]string{true: "pod-deleted", false: "slice-deleted"}[podDeleted], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := newKubeRig(t, Options{}, nil, tolerated(kPodWithClaim())...)
				k.sleepUntil(tenSeconds)
				want := []string{myPod + ": " + cancelling}
				if podDeleted {
					k.write("delete", kPodWithClaim())
					want = nil
				} else {
					k.write("delete", kSliceTainted())
				}
				k.sleepUntil(10 * minute)
				if got := k.podRequests(); len(got) != 0 {
					t.Errorf("got the controller's requests %q, want none", got)
				}
				if got := k.events(); !slices.Equal(got, want) {
					t.Errorf("got Events %q, want %q", got, want)
				}
				k.checkMetrics()
			})
		})
	}
}

// TestKubeParallelPodDeletion is kube's TestParallelPodDeletion: the pod is deleted right
// before the controller's first request about it, which finds it gone; no DELETE follows,
// and no Event is written: "Marking for deletion" comes only once a request found the pod,
// as kube writes it once its GET found it. (Kube's first request is a GET; this
// controller's, the status patch.)
func TestKubeParallelPodDeletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var client *fake.Clientset
		k := newKubeRig(t, Options{}, func(c kubernetes.Interface) kubernetes.Interface {
			client = c.(*fake.Clientset)
			client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if err := client.Tracker().Delete(v1.SchemeGroupVersion.WithResource("pods"), kNS, kPod); err != nil {
					return true, nil, err
				}
				return true, nil, apierrors.NewNotFound(v1.Resource("pods"), kPod)
			})
			return c
		}, kSliceTainted(), kSlice2(), kInUse(), kPodWithClaim())
		k.sleepUntil(minute)
		if got, want := k.podRequests(), []string{"patch/status " + myPod}; !slices.Equal(got, want) {
			t.Errorf("got requests %q, want %q", got, want)
		}
		if got := k.events(); len(got) != 0 {
			t.Errorf("got Events %q, want none", got)
		}
		k.checkMetrics() // not deleted by the controller: not counted, as in kube
		if got, want := k.outcomes(), []string{"gone/delete 1"}; !slices.Equal(got, want) {
			t.Errorf("got outcomes %q, want %q", got, want)
		}
	})
}

// TestKubeRetry is kube's TestRetry: the first request about the pod fails with a 500; it is
// retried, and the pod is deleted once, with one "Marking for deletion" Event. Kube retries
// after its work queue's 5 ms; this controller after the engine's backoff, 100 ms less up to
// 20% of jitter (a listed difference).
func TestKubeRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failed := false
		k := newKubeRig(t, Options{}, func(c kubernetes.Interface) kubernetes.Interface {
			c.(*fake.Clientset).PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if !failed {
					failed = true
					return true, nil, apierrors.NewInternalError(errors.New("fake error"))
				}
				return false, nil, nil
			})
			return c
		}, kSliceTainted(), kSlice2(), kInUse(), kPodWithClaim())
		k.sleepUntil(minute)
		if got, want := k.podRequests(), []string{"patch/status " + myPod, "patch/status " + myPod, "delete " + myPod}; !slices.Equal(got, want) {
			t.Errorf("got requests %q, want %q", got, want)
		}
		if got := k.deletedAt()[myPod]; got < 80*time.Millisecond || got > 100*time.Millisecond {
			t.Errorf("the retry deleted the pod at +%v, want within [80ms, 100ms]", got)
		}
		if got, want := k.events(), []string{myPod + ": " + marking}; !slices.Equal(got, want) {
			t.Errorf("got Events %q, want %q", got, want)
		}
		k.checkMetrics(k.deletedAt()[myPod]) // kube's 5 ms is its retry; this one's is the backoff
		if got, want := k.outcomes(), []string{"failed/InternalError 1", "succeeded/delete 1"}; !slices.Equal(got, want) {
			t.Errorf("got outcomes %q, want %q", got, want)
		}
	})
}

// TestKubeDifferences pins the intended differences from kube's controller that its
// scenarios show, listed in the package documentation (the others: TestKubeEviction, two
// requests; TestKubeRetry, the backoff): each case is kube's evict-pod-resourceclaim with
// one change, and says what kube does.
func TestKubeDifferences(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kube    string
		objects []runtime.Object
		deleted map[string]time.Duration
	}{
		{"a finished pod is not evicted", "kube deletes it at +0 (kubernetes#96363)",
			objs(kSliceTainted(), kSlice2(), kInUse(), finished(kPodWithClaim())), nil},
		{"a toleration with an empty effect counts", "kube counts only NoExecute ones, and deletes the pod at +0",
			objs(kSliceTainted(), kSlice2(), kInUse(resourcev1.DeviceToleration{Operator: resourcev1.DeviceTolerationOpExists}), kPodWithClaim()), nil},
		{"a TimeAdded in the future counts from first sight", "kube waits until TimeAdded, +40 s",
			objs(kInUse(), kPodWithClaim(), kRuleInstance1Later()), map[string]time.Duration{myPod: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := newKubeRig(t, Options{}, nil, tc.objects...)
				k.sleepUntil(neverAfter)
				if got := k.deletedAt(); !maps.Equal(got, orEmpty(tc.deleted)) {
					t.Errorf("got pods deleted at %v, want %v (%s)", got, orEmpty(tc.deleted), tc.kube)
				}
			})
		})
	}
}

// kRuleInstance1Later is kube's evict-instance, added 40 s in the future.
func kRuleInstance1Later() *resourcev1.DeviceTaintRule {
	return kRule("evict-instance", "1234", byDevice("instance"), resourcev1.DeviceTaintEffectNoExecute, 40)
}
