package clientgo_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// TestControllerBudgetModel is the budgets' model test (eviction's TestBudgetModel, whose
// comment states the invariants) on the drop-in Controller over a fake clientset: the API
// server's objects are the truth. Random runs of an outage's events (nodes tainted
// unreachable 10 minutes ago, nodes recovering, pods created and deleted, Confirm
// annotations), DELETEs the API server refuses (500) or throttles (429), a pod deleted on
// an unreachable node staying Terminating for good (elsewhere the kubelet finishes it after
// its grace period), and restarts: the Controller stopped and a fresh one started on the
// same cluster, often in the middle of the outage, its informers delivering the listing as
// they do. At every DELETE it checks the Brake's rule, Confirm's and InFlight's against the
// cluster; after every step Stats against Pending; at the end, the world standing still and
// then the budgets lifted, that every due pod no budget holds is deleted within an hour of
// fake time. 8 fixed seeds, then random ones for TAINTEVICT_MODEL_TIME split as in
// eviction's (1 s here by default); TAINTEVICT_MODEL_SEED=N replays one.
func TestControllerBudgetModel(t *testing.T) {
	budget := time.Second
	if s := os.Getenv("TAINTEVICT_MODEL_TIME"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("TAINTEVICT_MODEL_TIME=%q: %v", s, err)
		}
		budget = d / 4
	}
	if s := os.Getenv("TAINTEVICT_MODEL_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("TAINTEVICT_MODEL_SEED=%q: %v", s, err)
		}
		runControllerSeed(t, seed)
		return
	}
	for seed := range uint64(8) {
		runControllerSeed(t, seed)
	}
	for end := time.Now().Add(budget); time.Now().Before(end); {
		runControllerSeed(t, rand.Uint64())
	}
}

func runControllerSeed(t *testing.T, seed uint64) {
	t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCluster(t, seed)
			c.run()
			c.report()
		})
	})
}

var (
	nodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	podsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodesGVK = schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	podsGVK  = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
)

const (
	unreachableKey = v1.TaintNodeUnreachable
	notReadyKey    = v1.TaintNodeNotReady
	podGrace       = 30 * time.Second
)

// cluster is one run: a fake clientset (the truth), the Controller's incarnations, the
// checks.
type cluster struct {
	t       *testing.T
	seed    uint64
	r       *rand.Rand
	clk     *clocktesting.FakeClock
	client  *fake.Clientset
	opts    eviction.Options
	nodes   int
	pods    []string
	nextUID int

	c      *clientgo.Controller
	cancel context.CancelFunc
	done   chan error

	mu       sync.Mutex
	inc      int
	prev     truth
	answers  map[string]int // pod name -> 0 accepted, 1 refused (500), 2 throttled (429)
	flights  map[types.UID]*delFlight
	bad      map[string][]string
	trace    []string
	firstBad int
}

// delFlight is a pod this incarnation sent a DELETE for: whether one was accepted.
type delFlight struct {
	key      types.NamespacedName
	node     string
	accepted bool
	// held: the brake, Confirm or Synced holds its retry, which is then not in flight (its
	// DELETEs did nothing), and its next DELETE is let go anew, through InFlight too.
	held bool
}

// heldObserver tells the cluster which retries incarnation inc holds at a budget that holds
// while a condition lasts.
type heldObserver struct {
	eviction.NopObserver
	c   *cluster
	inc int
}

func (o heldObserver) Delayed(ref eviction.PodRef, reason eviction.Reason) {
	if reason != eviction.ReasonPaused && reason != eviction.ReasonUnconfirmed && reason != engine.ReasonNotSynced {
		return
	}
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	if f := o.c.flights[ref.UID]; f != nil && o.inc == o.c.inc && !f.accepted {
		f.held = true
		o.c.logLocked("incarnation %d holds the retry of %s (%s)", o.inc, ref.Name, reason)
	}
}

func newCluster(t *testing.T, seed uint64) *cluster {
	r := rand.New(rand.NewPCG(seed, seed^0xc1))
	c := &cluster{t: t, seed: seed, r: r, clk: clocktesting.NewFakeClock(time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)),
		client: fake.NewClientset(), answers: map[string]int{}, nodes: 6 + r.IntN(5)}
	c.opts = eviction.Options{Clock: c.clk, ActTimeout: 10 * time.Second, Backoff: eviction.Backoff{Base: time.Second, Cap: 20 * time.Second, Jitter: -1}}
	switch seed % 4 {
	case 0:
		c.opts.Brake = eviction.Brake{Fraction: 0.5}
	case 1:
		c.opts.InFlight = eviction.InFlight{Max: 1 + r.IntN(2)}
	case 2:
		c.opts.Confirm = eviction.Confirm{Fraction: 0.5, MinTargets: 2}
	case 3:
		c.opts.Brake = eviction.Brake{ZoneFraction: 0.5}
		c.opts.InFlight = eviction.InFlight{Max: 2}
		c.opts.Confirm = eviction.Confirm{Fraction: 0.6, MinTargets: 2}
	}
	for i := range 12 + r.IntN(6) {
		c.pods = append(c.pods, fmt.Sprint("p", i))
	}
	c.client.PrependReactor("delete", "pods", c.deleteReactor)
	return c
}

func (c *cluster) logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logLocked(format, args...)
}

func (c *cluster) logLocked(format string, args ...any) {
	c.trace = append(c.trace, fmt.Sprintf("+%v ", c.clk.Since(time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)))+fmt.Sprintf(format, args...))
}

func (c *cluster) violate(invariant, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violateLocked(invariant, format, args...)
}

func (c *cluster) violateLocked(invariant, format string, args ...any) {
	if c.bad == nil {
		c.bad = map[string][]string{}
		c.firstBad = len(c.trace)
	}
	c.bad[invariant] = append(c.bad[invariant], fmt.Sprintf(format, args...))
}

func (c *cluster) zoneOf(node string) string {
	i, _ := strconv.Atoi(strings.TrimPrefix(node, "n"))
	return fmt.Sprint("z", i%2)
}

func (c *cluster) newNode(i int) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("n", i), Labels: map[string]string{v1.LabelTopologyZone: c.zoneOf(fmt.Sprint("n", i))}}}
}

// run builds the cluster, starts a Controller, takes the steps, and lets it drain.
func (c *cluster) run() {
	for i := range c.nodes {
		must(c.t, c.client.Tracker().Add(c.newNode(i)))
	}
	for _, p := range c.pods {
		if c.r.IntN(4) != 0 {
			c.createPod(p)
		}
	}
	c.start()
	for step := range 60 {
		c.logf("step %d", step)
		c.setPrev()
		if step == 20 { // every run has a fresh Controller started in the middle of an outage
			c.outage()
			synctest.Wait()
			c.restart()
		} else {
			c.randomStep()
		}
		synctest.Wait()
		c.checkIdle(fmt.Sprint("step ", step))
	}
	c.drain("standing still", false)
	c.lift()
	c.drain("lifted", true)
	c.stop()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// start starts a fresh Controller on the cluster and waits until its caches have synced.
func (c *cluster) start() {
	c.mu.Lock()
	c.inc++
	c.flights = map[types.UID]*delFlight{}
	c.logLocked("start incarnation %d", c.inc)
	c.mu.Unlock()
	events := fake.NewClientset() // Events apart, accepted whatever their names
	events.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, a.(k8stesting.CreateAction).GetObject(), nil
	})
	ctl, err := clientgo.NewController(c.t.Context(), c.client, clientgo.NewFactory(c.client), clientgo.Options{Manager: c.opts, WaitIdle: true, EventClient: events,
		Observers: []eviction.Observer{heldObserver{c: c, inc: c.inc}}})
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.t.Context())
	c.c, c.cancel, c.done = ctl, cancel, make(chan error, 1)
	go func() { c.done <- ctl.Run(ctx) }()
	<-ctl.Synced()
	synctest.Wait()
}

func (c *cluster) stop() {
	c.cancel()
	if err := <-c.done; err != nil {
		c.violate("run", "Run: %v", err)
	}
}

// randomStep does one random thing to the cluster, through its tracker (as the API
// server's other clients would), or restarts the Controller.
func (c *cluster) randomStep() {
	r := c.r
	switch n := r.IntN(100); {
	case n < 40:
		d := time.Duration(r.IntN(60)) * time.Second
		c.logf("step the clock %v", d)
		c.clk.Step(d)
	case n < 48:
		c.outage()
	case n < 54: // nodes recover
		for i := range c.nodes {
			if r.IntN(2) == 0 {
				c.setTaint(i, "", time.Time{})
			}
		}
	case n < 58:
		c.setTaint(r.IntN(c.nodes), notReadyKey, c.clk.Now().Add(-time.Duration(r.IntN(400))*time.Second))
	case n < 62: // an operator confirms, or takes it back
		node := c.node(fmt.Sprint("n", r.IntN(c.nodes)))
		node.Annotations = nil
		if r.IntN(2) == 0 {
			node.Annotations = map[string]string{eviction.ConfirmAnnotation: []string{"*", unreachableKey}[r.IntN(2)]}
		}
		c.logf("confirm on %s: %q", node.Name, node.Annotations[eviction.ConfirmAnnotation])
		must(c.t, c.client.Tracker().Update(nodesGVR, node, ""))
	case n < 77:
		if name := c.pods[r.IntN(len(c.pods))]; c.pod(name) == nil {
			c.createPod(name)
		}
	case n < 82:
		if p := c.pod(c.pods[r.IntN(len(c.pods))]); p != nil {
			c.logf("the owner deletes %s", p.Name)
			must(c.t, c.client.Tracker().Delete(podsGVR, p.Namespace, p.Name))
		}
	case n < 88:
		name, answer := c.pods[r.IntN(len(c.pods))], r.IntN(3)
		c.mu.Lock()
		c.answers[name] = answer
		c.logLocked("the API server answers a DELETE of %s with %d", name, answer)
		c.mu.Unlock()
	case n < 94:
		c.sweep()
	default:
		c.restart()
	}
}

// outage taints most nodes unreachable, 10 minutes ago.
func (c *cluster) outage() {
	for i := range c.nodes {
		if c.r.IntN(10) < 7 {
			c.setTaint(i, unreachableKey, c.clk.Now().Add(-10*time.Minute))
		}
	}
}

// restart stops the Controller and starts a fresh one on the same cluster.
func (c *cluster) restart() {
	c.logf("restart")
	c.stop()
	c.start()
}

// setTaint gives node i the NoExecute taint key added at added (keeping its TimeAdded if it
// has it), or takes every NoExecute taint away with key "".
func (c *cluster) setTaint(i int, key string, added time.Time) {
	node := c.node(fmt.Sprint("n", i))
	if node == nil {
		return
	}
	switch {
	case key == "":
		if len(node.Spec.Taints) == 0 {
			return
		}
		node.Spec.Taints = nil
	case slices.ContainsFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.Key == key }):
		return
	default:
		at := metav1.NewTime(added)
		node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute, TimeAdded: &at})
	}
	c.logf("taints of %s: %v", node.Name, taintKeys(node))
	must(c.t, c.client.Tracker().Update(nodesGVR, node, ""))
}

func taintKeys(n *v1.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		out = append(out, t.Key)
	}
	return out
}

func (c *cluster) createPod(name string) {
	r := c.r
	c.nextUID++
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "p"))
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprint("ns", i%2), Name: name, UID: types.UID(fmt.Sprintf("%s-%d", name, c.nextUID)),
		CreationTimestamp: metav1.NewTime(c.clk.Now())}, Spec: v1.PodSpec{NodeName: fmt.Sprint("n", r.IntN(c.nodes))}}
	secs := []int64{0, 30, 300}[r.IntN(3)]
	switch r.IntN(4) {
	case 0:
	case 1, 2:
		p.Spec.Tolerations = []v1.Toleration{{Key: unreachableKey, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs},
			{Key: notReadyKey, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs}}
	default:
		p.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
	}
	c.logf("create %s (%s) on %s", name, p.UID, p.Spec.NodeName)
	must(c.t, c.client.Tracker().Add(p))
}

// sweep removes the pods whose grace period is over, but on unreachable nodes.
func (c *cluster) sweep() {
	now := c.clk.Now()
	for _, name := range c.pods {
		p := c.pod(name)
		if p == nil || p.DeletionTimestamp == nil || p.DeletionTimestamp.After(now) {
			continue
		}
		if n := c.node(p.Spec.NodeName); n != nil && slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == unreachableKey }) {
			continue
		}
		c.logf("the kubelet finishes %s", name)
		must(c.t, c.client.Tracker().Delete(podsGVR, p.Namespace, p.Name))
	}
}

func (c *cluster) node(name string) *v1.Node {
	obj, err := c.client.Tracker().Get(nodesGVR, "", name)
	if err != nil {
		return nil
	}
	return obj.(*v1.Node).DeepCopy()
}

func (c *cluster) pod(name string) *v1.Pod {
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "p"))
	obj, err := c.client.Tracker().Get(podsGVR, fmt.Sprint("ns", i%2), name)
	if err != nil {
		return nil
	}
	return obj.(*v1.Pod).DeepCopy()
}

// deleteReactor is the API server's DELETE of a pod: the checks, then the answer. A
// DELETE it accepts marks the pod Terminating for its grace period (the kubelet, or never
// on an unreachable node, finishes it).
func (c *cluster) deleteReactor(a k8stesting.Action) (bool, runtime.Object, error) {
	d := a.(k8stesting.DeleteAction)
	c.mu.Lock()
	defer c.mu.Unlock()
	obj, err := c.client.Tracker().Get(podsGVR, d.GetNamespace(), d.GetName())
	if err != nil {
		c.violateLocked("due", "DELETE of %s/%s, which the cluster does not have", d.GetNamespace(), d.GetName())
		return true, nil, err
	}
	p := obj.(*v1.Pod).DeepCopy()
	c.checkDelete(p)
	switch c.answers[p.Name] {
	case 1:
		return true, nil, apierrors.NewInternalError(fmt.Errorf("the API server failed"))
	case 2:
		return true, nil, apierrors.NewTooManyRequests("throttled by API Priority and Fairness", 1)
	}
	c.flights[p.UID].accepted = true
	if p.DeletionTimestamp == nil {
		end := metav1.NewTime(c.clk.Now().Add(podGrace))
		secs := int64(podGrace / time.Second)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &end, &secs
		if err := c.client.Tracker().Update(podsGVR, p, p.Namespace); err != nil {
			return true, nil, err
		}
	}
	return true, nil, nil
}

// checkDelete checks the invariants at a DELETE of p; under mu.
func (c *cluster) checkDelete(p *v1.Pod) {
	now := c.clk.Now()
	c.logLocked("incarnation %d deletes %s (%s)", c.inc, p.Name, p.UID)
	// The informers' caches, which the Controller reads, lag behind the cluster: its view of
	// p's node is the node before the step's changes or after them. So p may have been due
	// for any cause of either (Confirm must hold them all), and surely for those of both
	// (the brake must hold none).
	cur := c.truth()
	before, after := causesOn(p, c.prev.nodes[p.Spec.NodeName], now), causesOn(p, cur.nodes[p.Spec.NodeName], now)
	var causes, either []taintCause
	for _, cs := range after {
		if slices.Contains(before, cs) {
			causes = append(causes, cs)
		}
	}
	either = append(slices.Clip(before), after...)
	if p.DeletionTimestamp != nil || len(either) == 0 {
		c.violateLocked("due", "incarnation %d: DELETE of %s, which is leaving or not due", c.inc, p.Name)
	}
	f := c.flights[p.UID]
	suffix := "-retry"
	if f == nil || f.held {
		suffix = ""
	}
	if brakeHolds(c.opts.Brake, c.zoneOf, c.prev, cur, causes, false) {
		c.violateLocked("brake"+suffix, "incarnation %d: DELETE of %s, due to %v, while the brake's rule holds in the cluster", c.inc, p.Name, causes)
	}
	if confirmHolds(c.opts.Confirm, c.prev, cur, either) {
		c.violateLocked("confirm"+suffix, "incarnation %d: DELETE of %s, due to %v, while Confirm holds each", c.inc, p.Name, either)
	}
	if f != nil && !f.held {
		return
	}
	if max := c.opts.InFlight.Max; max > 0 {
		n := 0
		for uid, f := range c.flights {
			q := cur.pods[f.key]
			switch {
			case q == nil || q.UID != uid || q.Spec.NodeName != f.node:
			case f.accepted && (q.DeletionTimestamp == nil || q.DeletionTimestamp.After(now)):
				n++
			case !f.accepted && !f.held && dueIn(c.prev, f.key, uid, now) && dueIn(cur, f.key, uid, now):
				n++
			}
		}
		if n+1 > max {
			c.violateLocked("inflight", "incarnation %d: DELETE of %s with %d in flight already, Max %d", c.inc, p.Name, n, max)
		}
	}
	c.flights[p.UID] = &delFlight{key: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, node: p.Spec.NodeName}
}

// checkIdle checks Stats against Pending, the Controller idle.
func (c *cluster) checkIdle(when string) {
	s, pending := c.c.Manager().Stats(), c.c.Manager().Pending()
	if s.Pending() != len(pending) {
		c.violate("stats", "%s: Stats().Pending() = %d (%+v), len(Pending()) = %d", when, s.Pending(), s, len(pending))
	}
}

// drain lets the Controller work with the cluster standing still (every DELETE accepted),
// for up to an hour of fake time, then checks that every due pod that neither the brake nor
// Confirm holds in the cluster is Terminating or gone; every due pod, when lifted.
func (c *cluster) drain(phase string, lifted bool) {
	c.mu.Lock()
	clear(c.answers)
	c.mu.Unlock()
	for end := c.clk.Now().Add(time.Hour); c.clk.Now().Before(end) && len(c.starved(lifted)) > 0; {
		c.setPrev()
		c.sweep()
		c.clk.Step(30 * time.Second)
		synctest.Wait()
		c.checkIdle(phase)
	}
	for _, name := range c.starved(lifted) {
		c.violate("liveness", "%s: %s is due and no budget holds it in the cluster, and it is not deleted after an hour; stats %+v, pending %v", phase, name, c.c.Manager().Stats(), c.c.Manager().Pending())
	}
}

func (c *cluster) starved(lifted bool) []string {
	s, now := c.truth(), c.clk.Now()
	var out []string
	for key, p := range s.pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		causes := causesOn(p, s.nodes[p.Spec.NodeName], now)
		if len(causes) == 0 || !lifted && (brakeHolds(c.opts.Brake, c.zoneOf, s, s, causes, true) || confirmHolds(c.opts.Confirm, s, s, causes)) {
			continue
		}
		out = append(out, key.Name)
	}
	slices.Sort(out)
	return out
}

// lift adds healthy nodes, twice as many as there are, and has every node confirm every key.
func (c *cluster) lift() {
	for i := range c.nodes {
		n := c.node(fmt.Sprint("n", i))
		n.Annotations = map[string]string{eviction.ConfirmAnnotation: "*"}
		must(c.t, c.client.Tracker().Update(nodesGVR, n, ""))
	}
	for range 2 * c.nodes {
		n := c.newNode(c.nodes)
		n.Annotations = map[string]string{eviction.ConfirmAnnotation: "*"}
		must(c.t, c.client.Tracker().Add(n))
		c.nodes++
	}
	synctest.Wait()
}

func (c *cluster) report() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bad) == 0 {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(c.bad)) {
		msgs := c.bad[name]
		c.t.Errorf("invariant %s broken %d times, first: %s", name, len(msgs), strings.Join(msgs[:min(3, len(msgs))], "; "))
	}
	from, to := max(0, c.firstBad-60), min(len(c.trace), c.firstBad+5)
	c.t.Logf("what the run did before the first violation:\n\t%s", strings.Join(c.trace[from:to], "\n\t"))
	c.t.Errorf("budgets: Brake %+v, InFlight %+v, Confirm %v; replay with TAINTEVICT_MODEL_SEED=%d go test -race -run 'TestControllerBudgetModel' ./clientgo",
		c.opts.Brake, c.opts.InFlight, c.opts.Confirm.Fraction, c.seed)
}

// --- the truth, as the budgets count it

type truth struct {
	at      time.Time
	nodes   map[string]*v1.Node
	pods    map[types.NamespacedName]*v1.Pod
	counted map[types.UID]bool            // pods bound and not leaving
	evicts  map[string]map[types.UID]bool // key -> the counted pods on a node carrying it, not tolerating it forever
}

func (c *cluster) setPrev() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prev = c.truth()
}

func (c *cluster) truth() truth {
	s := truth{at: c.clk.Now(), nodes: map[string]*v1.Node{}, pods: map[types.NamespacedName]*v1.Pod{}, counted: map[types.UID]bool{}, evicts: map[string]map[types.UID]bool{}}
	nodes, err := c.client.Tracker().List(nodesGVR, nodesGVK, "")
	must(c.t, err)
	for _, n := range nodes.(*v1.NodeList).Items {
		s.nodes[n.Name] = &n
	}
	for _, ns := range []string{"ns0", "ns1"} {
		pods, err := c.client.Tracker().List(podsGVR, podsGVK, ns)
		must(c.t, err)
		for _, p := range pods.(*v1.PodList).Items {
			s.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = &p
			if p.DeletionTimestamp != nil {
				continue
			}
			s.counted[p.UID] = true
			n := s.nodes[p.Spec.NodeName]
			if n == nil {
				continue
			}
			taints := tolerations.NoExecuteTaints(n.Spec.Taints)
			for i := range taints {
				if tolerations.Deadline(taints[i:i+1], p.Spec.Tolerations, time.Time{}, time.Time{}, tolerations.Options{}).Verdict == tolerations.Stay {
					continue
				}
				if s.evicts[taints[i].Key] == nil {
					s.evicts[taints[i].Key] = map[types.UID]bool{}
				}
				s.evicts[taints[i].Key][p.UID] = true
			}
		}
	}
	return s
}

type taintCause struct{ node, key string }

// causesOn returns the NoExecute taints of n (p's node; nil: none) that make p due at now.
func causesOn(p *v1.Pod, n *v1.Node, now time.Time) []taintCause {
	if n == nil {
		return nil
	}
	var out []taintCause
	taints := tolerations.NoExecuteTaints(n.Spec.Taints)
	for i := range taints {
		if tolerations.Deadline(taints[i:i+1], p.Spec.Tolerations, now, now, tolerations.Options{}).Verdict == tolerations.EvictNow {
			out = append(out, taintCause{n.Name, taints[i].Key})
		}
	}
	return out
}

// dueIn reports whether the pod key, with uid, is in s, not leaving, and due at now.
func dueIn(s truth, key types.NamespacedName, uid types.UID, now time.Time) bool {
	p := s.pods[key]
	return p != nil && p.UID == uid && p.DeletionTimestamp == nil && len(causesOn(p, s.nodes[p.Spec.NodeName], now)) > 0
}

// brakeHolds reports whether the brake's rule holds, in both prev and cur, for a key of one
// of causes (see eviction's TestBudgetModel); orAt counts exactly the fraction too.
func brakeHolds(b eviction.Brake, zoneOf func(string) string, prev, cur truth, causes []taintCause, orAt bool) bool {
	carries := func(n *v1.Node, key string) bool {
		return n != nil && slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == key && t.Effect == v1.TaintEffectNoExecute })
	}
	over := func(n, all int, fraction float64) bool {
		return fraction > 0 && (float64(n) > fraction*float64(all) || orAt && float64(n) == fraction*float64(all))
	}
	for _, cs := range causes {
		carry, all, carryZ, allZ := 0, 0, 0, 0
		names := map[string]bool{}
		for name := range prev.nodes {
			names[name] = true
		}
		for name := range cur.nodes {
			names[name] = true
		}
		for name := range names {
			in := zoneOf(name) == zoneOf(cs.node)
			both := carries(prev.nodes[name], cs.key) && carries(cur.nodes[name], cs.key)
			all++
			if both {
				carry++
			}
			if in {
				allZ++
				if both {
					carryZ++
				}
			}
		}
		if over(carry, all, b.Fraction) || over(carryZ, allZ, b.ZoneFraction) {
			return true
		}
	}
	return false
}

// confirmHolds reports whether Confirm holds every one of causes in both prev and cur (see
// eviction's TestBudgetModel).
func confirmHolds(conf eviction.Confirm, prev, cur truth, causes []taintCause) bool {
	if conf.Fraction <= 0 || len(causes) == 0 {
		return false
	}
	targets := map[types.UID]bool{}
	for uid := range prev.counted {
		targets[uid] = true
	}
	for uid := range cur.counted {
		targets[uid] = true
	}
	for _, cs := range causes {
		evicts := 0
		for uid := range cur.evicts[cs.key] {
			if prev.evicts[cs.key][uid] {
				evicts++
			}
		}
		confirmed := func(s truth) bool {
			return s.nodes[cs.node] != nil && eviction.Confirms(s.nodes[cs.node].Annotations[eviction.ConfirmAnnotation], cs.key)
		}
		if !conf.Exceeds(evicts, len(targets)) || confirmed(prev) || confirmed(cur) {
			return false
		}
	}
	return true
}
