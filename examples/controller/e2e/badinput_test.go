package e2e

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Bad input from the cluster (issue 20, part 3): objects that the API server stores, or
// that a server of another version stored, and that would trip a naive controller. Each
// test checks the outcome the docs promise (evicted, kept or paused) on the pods as the
// server has them, and that the controller stays quiet afterwards: over a window in which
// it has nothing to do, it makes no request and spends little CPU (no retry storm, no hot
// loop), and it made exactly the requests each eviction needs (the status patch and the
// DELETE, both answered 200).

// quietWindow is how long a controller with nothing left to do is watched.
const quietWindow = 3 * time.Second

// Bounds over quietWindow. Idle, the controller makes no request (no lease: the tests run
// without leader election) and spends a few hundredths of a CPU second; a retry storm
// makes requests at its client's rate (50 a second) and a hot loop spends a core.
const (
	maxQuietRequests = 0
	maxQuietCPU      = 0.3 // CPU seconds over quietWindow, race detector included
)

// quiet lets the controller settle (see settle), then watches it for quietWindow and checks that it makes no request (in
// the audit log; but for the checks of the test's own scrapes) and spends at most maxQuietCPU (its process_cpu_seconds_total), and that it
// still runs, has not panicked and, built with -race, has seen no data race. It logs what it
// measured.
func (p *process) quiet(t *testing.T) {
	t.Helper()
	defer p.assertAlive(t)
	p.settle(t)
	start := time.Now()
	cpu := p.metric(t, "process_cpu_seconds_total")
	time.Sleep(quietWindow)
	spent := p.metric(t, "process_cpu_seconds_total") - cpu
	end := time.Now()
	reqs, err := auditEvents(p.id, func(e auditEvent) bool {
		return !e.Received.Before(start) && e.Received.Before(end) && !answersScrape(e)
	})
	require.NoError(t, err)
	var what []string
	for _, e := range reqs {
		what = append(what, e.what())
	}
	t.Logf("%s over %s with nothing to do: %d requests %v, %.3f CPU seconds", p.name, quietWindow, len(reqs), what, spent)
	assert.LessOrEqual(t, len(reqs), maxQuietRequests, "requests of %s over %s with nothing to do: %v", p.name, quietWindow, what)
	assert.LessOrEqual(t, spent, maxQuietCPU, "CPU seconds of %s over %s with nothing to do", p.name, quietWindow)
}

// settle waits until the controller has made no request for a second (but for the checks of
// the test's own scrapes), so that the writes of the work it just did (an Event written
// after the line the test waited for, say) are not taken for a loop; it fails the test if
// the controller has not settled after settleFor.
func (p *process) settle(t *testing.T) {
	t.Helper()
	const settleFor = 15 * time.Second
	deadline := time.Now().Add(settleFor)
	for {
		from := time.Now()
		time.Sleep(time.Second)
		reqs, err := auditEvents(p.id, func(e auditEvent) bool { return !e.Received.Before(from) && !answersScrape(e) })
		require.NoError(t, err)
		if len(reqs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var what []string
			for _, e := range reqs {
				what = append(what, e.what())
			}
			t.Fatalf("%s still makes requests %s after its work: %v", p.name, settleFor, what)
		}
	}
}

// answersScrape says whether a request is the controller checking a scraper's token and
// rights (TokenReview, SubjectAccessReview), which the test's own scrape of /metrics causes.
func answersScrape(e auditEvent) bool {
	return e.ObjectRef != nil && (e.ObjectRef.Resource == "tokenreviews" || e.ObjectRef.Resource == "subjectaccessreviews")
}

// assertAlive checks that the controller still runs and wrote no panic and no data race.
func (p *process) assertAlive(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		t.Errorf("%s exited: %v", p.name, p.err)
	default:
	}
	out := p.out.String()
	for _, bad := range []string{"panic", "DATA RACE"} {
		assert.NotContains(t, strings.ToLower(out), strings.ToLower(bad), "the output of %s", p.name)
	}
}

// failureReasons are the reasons of taintevict_evictions_total{outcome="failed"} that a
// controller facing odd objects could meet.
var failureReasons = []string{"Invalid", "BadRequest", "Conflict", "NotFound", "Forbidden", "InternalError", "Timeout", "Panic", "Other"}

// assertRequests checks the controller's requests about the pods of ns: for each pod of
// evicted, exactly the status patch and the DELETE, each answered 200; for every other pod,
// no write at all.
func (p *process) assertRequests(t *testing.T, ns string, evicted ...string) {
	t.Helper()
	writes, err := auditEvents(p.id, func(e auditEvent) bool {
		return e.ObjectRef != nil && e.ObjectRef.Resource == "pods" && e.ObjectRef.Namespace == ns &&
			e.Verb != "get" && e.Verb != "list" && e.Verb != "watch"
	})
	require.NoError(t, err)
	got := map[string][]string{}
	for _, e := range writes {
		got[e.ObjectRef.Name] = append(got[e.ObjectRef.Name], fmt.Sprintf("%s %d", e.what(), e.code()))
	}
	want := map[string][]string{}
	for _, name := range evicted {
		want[name] = []string{"patch pods/status 200", "delete pods 200"}
	}
	assert.Equal(t, want, got, "the controller's writes of pods, with the server's answers")
}

// assertCounted checks that the node side's metrics count n evictions and no failed
// attempt.
func (p *process) assertCounted(t *testing.T, n int) {
	t.Helper()
	assert.Equal(t, float64(n), p.metric(t, outcomes("succeeded", "delete")), "evictions the metrics count")
	for _, r := range failureReasons {
		assert.Zero(t, p.metric(t, outcomes("failed", r)), "failed attempts with reason %s", r)
	}
}

// assertKept checks that the pods are neither deleted nor marked.
func (s *scene) assertKept(names ...string) {
	s.t.Helper()
	for _, n := range names {
		s.assertNotEvicted(n)
	}
}

// A toleration with an operator or an effect this API server does not know (one that an
// older or newer server stored) tolerates nothing, so its pod is evicted as kube does it;
// a toleration with every field empty tolerates a taint with no value, as kube's matching
// does; a taint with an unknown effect is not NoExecute, so it evicts nothing. The server
// refuses such objects, so the test writes them into etcd, as that other server left
// them, and checks that the server serves them and the watch brings them.
func TestBadInputUnknownOperatorAndEffect(t *testing.T) {
	s := newScene(t)
	node, odd := s.node("n"), s.node("odd")
	s.taint(node)
	for _, name := range []string{"operator", "effect", "empty", "kept"} {
		s.pod(name, node, tolerate(nil))
	}
	s.pod("on-odd", odd)
	c := startController(t, "controller")

	changed := time.Now()
	rewritePod(t, s.ns, "operator", func(p *v1.Pod) { p.Spec.Tolerations[0].Operator = "Sometimes" })
	rewritePod(t, s.ns, "effect", func(p *v1.Pod) { p.Spec.Tolerations[0].Effect = "NoExecuteLater" })
	// All fields empty: the operator "" is Equal, and the empty key, effect and value
	// match the outage taint's, so kube's matching tolerates it, forever.
	rewritePod(t, s.ns, "empty", func(p *v1.Pod) { p.Spec.Tolerations[0] = v1.Toleration{} })
	rewriteNode(t, odd, func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: outage, Effect: "EvictSoon", TimeAdded: &metav1.Time{Time: changed.Truncate(time.Second)}})
	})
	pod, seen := s.waitDeleted("operator")
	assert.Equal(t, v1.TolerationOperator("Sometimes"), pod.Spec.Tolerations[0].Operator, "the operator as the watch brings it")
	s.assertEvicted(pod)
	assertAt(t, "the unknown operator's eviction", seen, changed)
	pod, seen = s.waitDeleted("effect")
	assert.Equal(t, v1.TaintEffect("NoExecuteLater"), pod.Spec.Tolerations[0].Effect, "the effect as the watch brings it")
	s.assertEvicted(pod)
	assertAt(t, "the unknown effect's eviction", seen, changed)
	n, err := admin.CoreV1().Nodes().Get(s.ctx, odd, metav1.GetOptions{})
	require.NoError(t, err)
	i := slices.IndexFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == outage })
	if assert.GreaterOrEqual(t, i, 0, "the odd taint among %v", n.Spec.Taints) {
		assert.Equal(t, v1.TaintEffect("EvictSoon"), n.Spec.Taints[i].Effect, "the taint as the server serves it")
	}

	assert.Equal(t, v1.Toleration{}, s.getPod("empty").Spec.Tolerations[0], "the empty toleration as the server serves it")
	c.quiet(t)
	s.assertKept("kept", "empty", "on-odd")
	c.assertRequests(t, s.ns, "operator", "effect")
	c.assertCounted(t, 2)

	// The controller did see the odd node: a NoExecute taint next to the unknown one (the
	// server would refuse the update, so it goes the same way) evicts its pod.
	changed = time.Now()
	rewriteNode(t, odd, func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: outage, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: changed.Truncate(time.Second)}})
	})
	pod, seen = s.waitDeleted("on-odd")
	s.assertEvicted(pod)
	assertAt(t, "the eviction from the node with the unknown effect", seen, changed)
}

// A TimeAdded years ahead (the clock of whoever tainted the node runs ahead), or in year
// 12000, counts from the time the controller first saw the taint, so it neither evicts at once nor holds the
// eviction back for years; one years back, or in year 1, makes every finite toleration of
// less run out; none at all counts from first sight. A tolerationSeconds of math.MaxInt64
// (longer than a time.Duration holds) keeps its pod wherever TimeAdded lies, year 1
// included: the library counts those seconds in full, where a clamp to 292 years would
// have evicted at once from a TimeAdded before 1734.
func TestBadInputTimeAddedSkew(t *testing.T) {
	s := newScene(t)
	ahead, behind, unset, ancient, far := s.node("ahead"), s.node("behind"), s.node("unset"), s.node("ancient"), s.node("far")
	for _, n := range []string{ahead, behind, unset, ancient, far} {
		s.pod(n+"-3s", n, tolerate(ptr.To[int64](3)))
		s.pod(n+"-max", n, tolerate(ptr.To[int64](math.MaxInt64)))
	}
	s.pod(behind+"-300s", behind, tolerate(ptr.To[int64](300)))
	c := startController(t, "controller")

	years := 5 * 365 * 24 * time.Hour
	tainted := time.Now()
	for n, added := range map[string]*metav1.Time{
		ahead:   {Time: tainted.Add(years).Truncate(time.Second)},
		behind:  {Time: tainted.Add(-years).Truncate(time.Second)},
		unset:   nil,
		ancient: {Time: time.Date(1, time.January, 1, 0, 0, 1, 0, time.UTC)},
	} {
		s.updateNode(n, func(node *v1.Node) {
			node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: outage, Effect: v1.TaintEffectNoExecute, TimeAdded: added})
		})
	}
	// Past year 9999, which RFC 3339 cannot write: stored as protobuf seconds, it reaches
	// the controller, which speaks protobuf by default, as any other time. (A client that
	// speaks JSON cannot decode the node list: see the report of issue 20.)
	rewriteNode(t, far, func(node *v1.Node) {
		node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: outage, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: time.Date(12000, time.January, 1, 0, 0, 0, 0, time.UTC)}})
	})
	for _, name := range []string{behind + "-3s", behind + "-300s", ancient + "-3s"} {
		pod, seen := s.waitDeleted(name)
		s.assertEvicted(pod)
		assertAt(t, name+"'s eviction", seen, tainted)
	}
	for _, name := range []string{ahead + "-3s", unset + "-3s", far + "-3s"} {
		pod, seen := s.waitDeleted(name)
		s.assertEvicted(pod)
		assertAt(t, name+"'s eviction", seen, tainted.Add(3*time.Second))
	}

	c.quiet(t)
	s.assertKept(ahead+"-max", behind+"-max", unset+"-max", ancient+"-max", far+"-max")
	c.assertRequests(t, s.ns, behind+"-3s", behind+"-300s", ancient+"-3s", ahead+"-3s", unset+"-3s", far+"-3s")
	c.assertCounted(t, 6)
}

// A pod with 1,000 tolerations: the API server stores them all (it sets no limit on their
// number), and its DefaultTolerationSeconds admission adds kube's two of 300 s (not-ready
// and unreachable). Under kube's node rules the first toleration, in list order, that tolerates a
// taint decides, wherever it stands among the 1,000.
func TestBadInputThousandTolerations(t *testing.T) {
	s := newScene(t)
	node := s.node("n")
	noise := make([]v1.Toleration, 999)
	for i := range noise {
		noise[i] = v1.Toleration{Key: fmt.Sprintf("e2e.taintevict.io/other-%d", i), Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	}
	with := func(first, last *v1.Toleration) []v1.Toleration {
		tols := append([]v1.Toleration(nil), noise...)
		if first != nil {
			tols[0] = *first
		}
		if last != nil {
			tols = append(tols, *last)
		} else {
			tols = append(tols, v1.Toleration{Key: "e2e.taintevict.io/other-last", Operator: v1.TolerationOpExists})
		}
		return tols
	}
	three, forever := tolerate(ptr.To[int64](3)), tolerate(nil)
	s.pod("none", node, with(nil, nil)...)
	s.pod("last-3s", node, with(nil, &three)...)
	s.pod("last-forever", node, with(nil, &forever)...)
	s.pod("first-3s-last-forever", node, with(&three, &forever)...)
	if got := len(s.getPod("none").Spec.Tolerations); got != 1002 {
		t.Errorf("the server stored %d tolerations, want 1,002: ours and kube's two defaults", got)
	}
	c := startController(t, "controller")

	tainted := time.Now()
	added := s.taint(node) // to the second
	pod, seen := s.waitDeleted("none")
	s.assertEvicted(pod)
	assertAt(t, "the untolerated pod's eviction", seen, tainted)
	for _, name := range []string{"last-3s", "first-3s-last-forever"} {
		pod, seen := s.waitDeleted(name)
		s.assertEvicted(pod)
		assertAt(t, name+"'s eviction", seen, added.Add(3*time.Second))
	}

	c.quiet(t)
	s.assertKept("last-forever")
	c.assertRequests(t, s.ns, "none", "last-3s", "first-3s-last-forever")
	c.assertCounted(t, 3)
}

// A node with 100 NoExecute taints, added in one update: a pod goes at the earliest
// deadline over all of them, at once if one is not tolerated, never if all are tolerated
// forever.
func TestBadInputHundredTaints(t *testing.T) {
	s := newScene(t)
	node := s.node("n")
	key := func(i int) string { return fmt.Sprintf("e2e.taintevict.io/taint-%d", i) }
	var allForever, allButOne, earliest []v1.Toleration
	for i := range 100 {
		tol := v1.Toleration{Key: key(i), Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
		allForever = append(allForever, tol)
		if i != 57 {
			allButOne = append(allButOne, tol)
		}
		tol.TolerationSeconds = ptr.To(int64(100 + i))
		if i == 42 {
			tol.TolerationSeconds = ptr.To[int64](3)
		}
		earliest = append(earliest, tol)
	}
	s.pod("all-forever", node, allForever...)
	s.pod("any-forever", node, v1.Toleration{Operator: v1.TolerationOpExists})
	s.pod("all-but-one", node, allButOne...)
	s.pod("earliest-3s", node, earliest...)
	c := startController(t, "controller")

	tainted := time.Now()
	added := tainted.Truncate(time.Second) // the API keeps seconds
	s.updateNode(node, func(n *v1.Node) {
		for i := range 100 {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key(i), Value: "v", Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: added}})
		}
	})
	pod, seen := s.waitDeleted("all-but-one")
	s.assertEvicted(pod)
	assertAt(t, "the eviction for the one taint not tolerated", seen, tainted)
	pod, seen = s.waitDeleted("earliest-3s")
	s.assertEvicted(pod)
	assertAt(t, "the eviction at the earliest deadline", seen, added.Add(3*time.Second))

	c.quiet(t)
	s.assertKept("all-forever", "any-forever")
	c.assertRequests(t, s.ns, "all-but-one", "earliest-3s")
	c.assertCounted(t, 2)
}

// A pod with no node (no scheduler bound it) is not the controller's, even with every node
// tainted; once bound to a tainted node, it goes. A node deleted while pods are bound to it
// cancels their pending evictions (kube leaves them to run out), with no Event, as kube
// writes none then; the metrics and the log say so. The same node created again with the
// taint starts them again.
func TestBadInputUnboundPodAndDeletedNode(t *testing.T) {
	s := newScene(t)
	node, gone := s.node("n"), s.node("gone")
	s.taint(node)
	s.pod("unbound", "")
	orphan := s.pod("orphan", gone, tolerate(ptr.To[int64](3)))
	c := startController(t, "controller")

	added := s.taint(gone)
	c.waitOutput(t, "scheduled  "+s.ns+"/orphan", failAfter)
	require.NoError(t, admin.CoreV1().Nodes().Delete(s.ctx, gone, metav1.DeleteOptions{}))
	c.waitOutput(t, "cancelled  "+s.ns+"/orphan on "+gone+": HolderDeleted", failAfter)
	// The quiet window ends past the cancelled deadline (added + 3 s) by tolerance.
	sleepUntil(added.Add(3*time.Second + tolerance - quietWindow))
	c.quiet(t)
	s.assertKept("unbound", "orphan")
	events, err := admin.CoreV1().Events(s.ns).List(s.ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range events.Items {
		if e.InvolvedObject.UID == orphan.UID {
			t.Errorf("an Event on the orphan whose node was deleted: %q, want none", e.Message)
		}
	}
	c.assertRequests(t, s.ns)
	c.assertCounted(t, 0)
	assert.Equal(t, 1.0, c.metric(t, outcomes("cancelled", "HolderDeleted")), "the cancellation the metrics count")

	bound := time.Now()
	require.NoError(t, admin.CoreV1().Pods(s.ns).Bind(s.ctx, &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: "unbound"},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{}))
	pod, seen := s.waitDeleted("unbound")
	s.assertEvicted(pod)
	assertAt(t, "the eviction once bound", seen, bound)

	back := time.Now().Truncate(time.Second)
	_, err = admin.CoreV1().Nodes().Create(s.ctx, &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: gone},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: outage, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: back}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	pod, seen = s.waitDeleted("orphan")
	s.assertEvicted(pod)
	assertAt(t, "the eviction on the node created again", seen, back.Add(3*time.Second))
	c.assertRequests(t, s.ns, "unbound", "orphan")
	c.assertCounted(t, 2)
}

// A DeviceTaintRule with an empty selector selects every device of the cluster; one
// without a selector selects none (the API's documented meanings). With -confirm-fraction
// the empty one is held, says why in its status, and waits quietly; without it, it evicts
// every pod that uses a device, and only those.
func TestBadInputDeviceRuleEmptySelector(t *testing.T) {
	s := newDeviceScene(t, "gpu-0", "gpu-1")
	s.podOnDevices("p0", alloc{device: "gpu-0"})
	s.podOnDevices("p1", alloc{device: "gpu-1"})
	s.pod("no-device", s.node("n"))
	args := []string{"-controllers=node,device"}
	paused := startController(t, "paused controller", append(args, "-confirm-fraction=0.5")...)

	// Without a selector: nothing.
	name := s.prefix + "-none"
	_, err := admin.ResourceV1().DeviceTaintRules().Create(s.ctx, &resourcev1.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       resourcev1.DeviceTaintRuleSpec{Taint: resourcev1.DeviceTaint{Key: "ecc", Effect: resourcev1.DeviceTaintEffectNoExecute}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	s.rules = append(s.rules, name)
	cond := s.ruleCondition("none", func(c metav1.Condition) bool { return c.Reason != "" })
	assert.Equal(t, "NotStarted", cond.Reason, cond.Message)

	// Empty: every device, so every pod that uses one: paused.
	s.rule("all", "ecc", resourcev1.DeviceTaintEffectNoExecute, &resourcev1.DeviceTaintSelector{})
	cond = s.ruleCondition("all", func(c metav1.Condition) bool { return c.Reason == "EvictionPaused" })
	assert.Equal(t, "2 pods need to be evicted in 1 namespace. Eviction paused: it would evict 2 of the 2 pods that use devices, more than 50%. "+
		"Annotate the DeviceTaintRule with taintevict.io/confirm-eviction=ecc to confirm it.", cond.Message)
	paused.waitOutput(t, "delayed    "+s.ns+"/p1", failAfter)
	paused.quiet(t)
	s.assertKept("p0", "p1", "no-device")
	paused.assertRequests(t, s.ns)
	paused.stop(t, 10*time.Second)

	c := startController(t, "controller", args...)
	for _, p := range []string{"p0", "p1"} {
		pod, _ := s.waitDeleted(p)
		s.assertDeviceEvicted(pod)
	}
	// The rule's status says Completed a period after the evictions, or after the paused
	// controller's last write of it, whichever is later, as kube writes it: the controller
	// has that to do before it is quiet.
	s.ruleCondition("all", func(c metav1.Condition) bool { return c.Reason == "Completed" })
	c.quiet(t)
	s.assertKept("no-device")
	c.assertRequests(t, s.ns, "p0", "p1")
}

// The device side's unknown values, written into etcd as a server of another version left
// them: a claim's toleration with an unknown operator tolerates nothing (its pod goes at
// once, as kube's device controller does it); a device taint of a ResourceSlice, and a
// DeviceTaintRule, with an unknown effect are not NoExecute, so they evict nothing, and the
// rule's status says so.
func TestBadInputDeviceUnknownOperatorAndEffect(t *testing.T) {
	s := newDeviceScene(t, "gpu-0", "gpu-1", "gpu-2")
	s.podOnDevices("operator", alloc{"gpu-0", "ecc", nil})
	s.podOnDevices("kept", alloc{"gpu-1", "ecc", nil})
	s.podOnDevices("on-odd", alloc{device: "gpu-2"})
	s.taintDevice("gpu-0", "ecc")
	s.taintDevice("gpu-1", "ecc")
	s.rule("odd", "other", resourcev1.DeviceTaintEffectNone, nil, "gpu-2")
	c := startController(t, "controller", deviceArgs...)

	changed := time.Now()
	etcdRewrite(t, "/registry/resourceclaims/"+s.ns+"/operator-claim", func(c *resourcev1.ResourceClaim) {
		c.Status.Allocation.Devices.Results[0].Tolerations[0].Operator = "Sometimes"
	})
	etcdRewrite(t, "/registry/resourceslices/"+s.slice, func(sl *resourcev1.ResourceSlice) {
		i := slices.IndexFunc(sl.Spec.Devices, func(d resourcev1.Device) bool { return d.Name == "gpu-2" })
		sl.Spec.Devices[i].Taints = []resourcev1.DeviceTaint{{Key: "ecc", Effect: "EvictSoon", TimeAdded: &metav1.Time{Time: changed.Truncate(time.Second)}}}
	})
	// Stored as v1beta2, as kube-apiserver v1.37 stores DeviceTaintRules.
	etcdRewrite(t, "/registry/devicetaintrules/"+s.prefix+"-odd", func(r *resourcev1beta2.DeviceTaintRule) {
		r.Spec.Taint.Effect = "EvictSoon"
		r.Generation++ // as the server does for a change of the spec
	})
	pod, seen := s.waitDeleted("operator")
	s.assertDeviceEvicted(pod)
	assertAt(t, "the unknown operator's eviction", seen, changed)
	claim, err := admin.ResourceV1().ResourceClaims(s.ns).Get(s.ctx, "operator-claim", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, resourcev1.DeviceTolerationOperator("Sometimes"), claim.Status.Allocation.Devices.Results[0].Tolerations[0].Operator, "the operator as the server serves it")
	cond := s.ruleCondition("odd", func(c metav1.Condition) bool { return c.Reason == "OtherEffect" })
	assert.Equal(t, "Eviction only happens for the NoExecute effect.", cond.Message)

	c.quiet(t)
	s.assertKept("kept", "on-odd")
	c.assertRequests(t, s.ns, "operator")

	// The controller did see the slice: the same taint as NoExecute evicts on-odd.
	changed = time.Now()
	etcdRewrite(t, "/registry/resourceslices/"+s.slice, func(sl *resourcev1.ResourceSlice) {
		i := slices.IndexFunc(sl.Spec.Devices, func(d resourcev1.Device) bool { return d.Name == "gpu-2" })
		sl.Spec.Devices[i].Taints[0].Effect = resourcev1.DeviceTaintEffectNoExecute
	})
	pod, seen = s.waitDeleted("on-odd")
	s.assertDeviceEvicted(pod)
	assertAt(t, "the eviction from the device with the unknown effect", seen, changed)
}
