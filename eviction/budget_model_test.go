package eviction_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
	"github.com/taintevict/taintevict/tolerations"
)

// The budgets' invariants. TestBudgetModel checks them against the truth (the cluster's
// nodes and pods, which the Source reads), never against what the Engine was told, at every
// Actuator call and after every step of random runs: holder and target updates, in any
// order and merged; restarts at any point (a new Engine on the same cluster, nothing
// carried over, fed as informers feed one that starts: in any order, then told it has
// synced); Actuator calls that fail, hang until ActTimeout, or answer overload
// (engine.IsOverload); a Source whose lookups fail for a while; pods that stay Terminating
// for good on unreachable nodes; Confirm annotations added and removed.
//
//   - Brake. No target that a taint key K makes due is acted on while the Brake's rule
//     holds for K in the Source: more than Brake.Fraction of all holders carry a NoExecute
//     taint with key K (or more than ZoneFraction of the holders of the target's group).
//     "Holds" is judged over the span of the updates being delivered: a holder counts as
//     carrying K only if it carries K both before and after them, and every holder of
//     either side counts among all holders, so that an order of delivery the Engine cannot
//     know better than is not held against it. After a restart that span is the whole
//     cluster: the Engine must have been told every holder (synced) before it acts.
//   - InFlight. Never more than InFlight.Max evictions in flight, as the Engine counts them:
//     from the first Actuator call of an eviction by this Engine until the Source shows its
//     target gone, or bound elsewhere, or the eviction closed without an action, or the
//     target is leaving and its GoneBy (a pod's deletionTimestamp, the end of its grace
//     period) has passed. After a restart, the evictions of a former Engine do not count.
//   - NamespaceLimit, OwnerLimit. Never more than Max evictions of one namespace (one
//     owner) let go, that is first acted on, by this Engine within any span of Per.
//   - Confirm. Nothing is acted on while Confirm holds each taint that makes it due: the
//     taint's key would evict more than Confirm.Fraction of all targets (bound and not
//     leaving), and at least MinTargets, and the holder's ConfirmAnnotation does not confirm
//     the key. Judged over the span of the updates as for the brake: a target counts among
//     those the key would evict if it did before and after them, among all targets if it
//     did on either side; a confirmation on either side counts.
//   - Liveness. Every target that is due, and that neither the Brake nor Confirm holds in
//     the Source, is acted on within bounded time once the Actuator answers: when the world
//     stands still, within an hour of fake time; and again once the brake and Confirm are
//     lifted (healthy holders added, every holder confirming), every target that is due.
//   - And two the budgets rest on: the Actuator is called only for a target that the Source
//     has, with that UID, not leaving and due; and whenever the Engine is idle, Stats agrees
//     with Pending (Stats().Pending() == len(Pending()), and Delayed by reason).
//
// checkRetries holds the retries of an eviction to the Brake and Confirm too: the Engine
// does not ask the budgets again about the retries of an eviction they let go (a retry is
// paced by the Backoff), and the test reports a retry that goes while they hold apart from
// a first call (brake-retry, confirm-retry).
const checkRetries = true

// The environment of TestBudgetModel: replay one seed; give the random run its wall-clock
// budget (a Go duration; 0 for none); have a failure report all the run did, not only the
// steps before its first violation.
const (
	modelSeedEnv  = "TAINTEVICT_MODEL_SEED"
	modelTimeEnv  = "TAINTEVICT_MODEL_TIME"
	modelTraceEnv = "TAINTEVICT_MODEL_TRACE" // "full": a failure's report gives the whole run
)

// modelFixedSeeds run on every run of the test; then random seeds for modelDefaultTime
// (split between the variants), unless TAINTEVICT_MODEL_TIME says otherwise.
const (
	modelFixedSeeds  = 24
	modelDefaultTime = 4 * time.Second
	modelSteps       = 120
)

// TestBudgetModel checks the budgets' invariants (above) on random runs of the Manager, and
// of an Engine over a Source of the test's own (each its own subtest), with a fixed set of
// seeds and then random ones for a few seconds. A failure names its seed: replay it with
// TAINTEVICT_MODEL_SEED=N.
func TestBudgetModel(t *testing.T) {
	var budget time.Duration = modelDefaultTime
	if s := os.Getenv(modelTimeEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", modelTimeEnv, s, err)
		}
		budget = d
	}
	for _, v := range modelVariants {
		t.Run(v.name, func(t *testing.T) {
			if s := os.Getenv(modelSeedEnv); s != "" {
				seed, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					t.Fatalf("%s=%q: %v", modelSeedEnv, s, err)
				}
				runModelSeed(t, v, seed)
				return
			}
			for seed := range uint64(modelFixedSeeds) {
				runModelSeed(t, v, seed)
			}
			end := time.Now().Add(budget / time.Duration(len(modelVariants)))
			for time.Now().Before(end) {
				runModelSeed(t, v, rand.Uint64())
			}
		})
	}
}

// runModelSeed runs one random run as the subtest seed=N.
func runModelSeed(t *testing.T, v modelVariant, seed uint64) {
	t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t, v, seed)
			w.run()
			w.report()
		})
	})
}

// --- the systems under test

// modelSUT is what a run drives: the Manager, or an Engine of pods on nodes over the
// test's own Source.
type modelSUT interface {
	syncable
	NodeUpdated(old, new *v1.Node)
	PodUpdated(old, new *v1.Pod)
	Run(ctx context.Context) error
	Stats() engine.Stats
	Pending() []engine.Pending
	// recounted tells the SUT that the counts of every Confirm scope may have changed.
	recounted()
}

type modelVariant struct {
	name string
	new  func(w *world, d eviction.Deleter, c eviction.Cache, opts eviction.Options) (modelSUT, error)
}

var modelVariants = []modelVariant{
	{"manager", func(_ *world, d eviction.Deleter, c eviction.Cache, opts eviction.Options) (modelSUT, error) {
		m, err := eviction.New(d, c, opts)
		if err != nil {
			return nil, err
		}
		return managerSUT{m}, nil
	}},
	{"engine", newEngineSUT},
}

// managerSUT is the Manager, whose own census counts for Confirm.
type managerSUT struct{ *eviction.Manager }

func (managerSUT) recounted() {}

// engineSUT is an Engine of pods, each bound to its node, over the test's own Source
// (modelSource), with a census for Confirm that counts the truth (truthCensus).
type engineSUT struct {
	*engine.Engine[*v1.Pod]
}

func newEngineSUT(w *world, d eviction.Deleter, c eviction.Cache, opts eviction.Options) (modelSUT, error) {
	if opts.Confirm.Fraction > 0 {
		opts.Confirm.Census = truthCensus{w}
	}
	e, err := engine.New(eviction.PodActuator(d), engine.Source[*v1.Pod](modelSource{c}), opts)
	if err != nil {
		return nil, err
	}
	return engineSUT{e}, nil
}

func (s engineSUT) NodeUpdated(old, new *v1.Node) {
	switch {
	case new == nil && old == nil:
	case new == nil:
		s.HolderDeleted(old.Name)
	default:
		s.HolderUpdated(engine.Holder{Name: new.Name, Taints: new.Spec.Taints, Group: new.Labels[v1.LabelTopologyZone]})
	}
}

func (s engineSUT) PodUpdated(old, new *v1.Pod) {
	switch {
	case new == nil && old == nil:
	case new == nil:
		s.TargetDeleted(old)
	default:
		s.TargetUpdated(new)
	}
}

func (s engineSUT) recounted() {
	for _, k := range modelKeys {
		s.Recounted(k)
	}
}

// modelSource is the engine variant's Source: pods bound to their nodes, from a Cache.
type modelSource struct{ c eviction.Cache }

func (s modelSource) Target(key types.NamespacedName) (*v1.Pod, bool, error) {
	p, err := s.c.Pod(key.Namespace, key.Name)
	return p, p != nil && err == nil, err
}

func (s modelSource) TargetsOn(node string) ([]*v1.Pod, error) {
	pods, err := s.c.PodsOnNode(node)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(pods, func(p *v1.Pod) bool { return p.Spec.NodeName != node }), nil
}

func (s modelSource) Holder(name string) (engine.Holder, bool, error) {
	n, err := s.c.Node(name)
	if err != nil || n == nil {
		return engine.Holder{}, false, err
	}
	return engine.Holder{Name: n.Name, Taints: n.Spec.Taints, Group: n.Labels[v1.LabelTopologyZone]}, true, nil
}

func (modelSource) Locate(p *v1.Pod) (types.NamespacedName, string) {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, p.Spec.NodeName
}

func (modelSource) Describe(p *v1.Pod, d *engine.Target) {
	d.Key, d.UID, d.Leaving, d.GoneBy = types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, p.UID, eviction.LeavingReason(p), eviction.GoneBy(p)
	d.Owner, d.Created = eviction.PodOwner(p), p.CreationTimestamp.Time
	if p.Spec.NodeName != "" {
		d.Bindings = append(d.Bindings, engine.Binding{Holder: p.Spec.NodeName, Tolerations: p.Spec.Tolerations})
	}
}

// truthCensus is the engine variant's Census: each taint key a scope, counted from the
// truth at each question (the Manager's census counts the updates it is given).
type truthCensus struct{ w *world }

func (c truthCensus) Reach(cause engine.Cause, into []engine.Reach) []engine.Reach {
	s := c.w.snapshot()
	return append(into, engine.Reach{Scope: cause.Key, Evicts: len(s.evicts[cause.Key]), Targets: len(s.counted),
		Confirmed: eviction.Confirms(s.confirm[cause.Holder], cause.Key), Counted: true})
}

// flakyCache is the SUT's view of the cluster: the truth, or a failure while fail is set.
type flakyCache struct {
	c    *evictiontest.Cache
	fail *atomic.Bool
}

var errFlaky = errors.New("the informer's cache fails")

func (f flakyCache) PodsOnNode(node string) ([]*v1.Pod, error) {
	if f.fail.Load() {
		return nil, errFlaky
	}
	return f.c.PodsOnNode(node)
}

func (f flakyCache) Pod(namespace, name string) (*v1.Pod, error) {
	if f.fail.Load() {
		return nil, errFlaky
	}
	return f.c.Pod(namespace, name)
}

func (f flakyCache) Node(name string) (*v1.Node, error) {
	if f.fail.Load() {
		return nil, errFlaky
	}
	return f.c.Node(name)
}

// --- the world

// The taint keys of the model.
var modelKeys = []string{unreachable, notReady, "example.com/maintenance"}

// The Actuator's answers, set per pod.
const (
	answerOK = iota
	answerFail
	answerOverload
	answerHang
)

// world is one run: the cluster (the truth), the SUT's incarnations, and the checks.
type world struct {
	t     *testing.T
	seed  uint64
	r     *rand.Rand
	v     modelVariant
	clk   *testclock.FakeClock
	cache *evictiontest.Cache // the truth, which the SUT reads through flakyCache
	fail  atomic.Bool
	opts  eviction.Options // the SUT's options, without Clock and Observer
	grace time.Duration    // a deleted pod's grace period; 0: it goes at once
	pods  []string         // the pod names; namespace by index
	// nodes is every node name used, zone by index; lift adds some, while the truth
	// census may read it.
	namesMu sync.RWMutex
	nodes   []string
	nextUID int

	// mu orders the informers' deliveries with the cluster's changes: each delivery hands
	// on the object's last delivered version and its current one, as an informer does.
	mu       sync.Mutex
	sut      modelSUT
	obs      *modelObserver
	inc      int // the SUT's incarnation
	gotNodes map[string]*v1.Node
	gotPods  map[string]*v1.Pod
	answers  map[string]int // pod name -> the Actuator's answer

	cancel context.CancelFunc
	done   chan error

	ck checker
}

func newWorld(t *testing.T, v modelVariant, seed uint64) *world {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	w := &world{t: t, seed: seed, r: r, v: v, clk: testclock.NewFakeClock(t0), cache: &evictiontest.Cache{}, answers: map[string]int{}}
	w.opts = eviction.Options{
		Workers: 1 + r.IntN(3), ActWorkers: 1 + r.IntN(4), ActTimeout: 10 * time.Second,
		Backoff: eviction.Backoff{Base: time.Second, Cap: 20 * time.Second, Jitter: -1},
	}
	switch seed % 6 { // each budget in turn, then all of them
	case 0:
		w.opts.Brake = eviction.Brake{Fraction: 0.5}
	case 1:
		w.opts.Brake = eviction.Brake{ZoneFraction: 0.5}
	case 2:
		w.opts.InFlight = eviction.InFlight{Max: 1 + r.IntN(3)}
	case 3:
		w.opts.NamespaceLimit = eviction.Window{Max: 2, Per: 30 * time.Second}
		w.opts.OwnerLimit = eviction.Window{Max: 1, Per: time.Minute}
	case 4:
		w.opts.Confirm = eviction.Confirm{Fraction: 0.5, MinTargets: 2}
	case 5:
		w.opts.Brake = eviction.Brake{Fraction: 0.5, ZoneFraction: 0.6}
		w.opts.InFlight = eviction.InFlight{Max: 2}
		w.opts.NamespaceLimit = eviction.Window{Max: 3, Per: 30 * time.Second}
		w.opts.OwnerLimit = eviction.Window{Max: 2, Per: time.Minute}
		w.opts.Confirm = eviction.Confirm{Fraction: 0.6, MinTargets: 2}
	}
	if r.IntN(4) == 0 {
		w.opts.RateLimit = eviction.Limit{PerSecond: 1, Burst: 3}
	}
	if r.IntN(4) == 0 {
		w.opts.LoopDamping = eviction.LoopDamping{Window: time.Minute}
	}
	if r.IntN(3) != 0 || w.opts.InFlight.Max > 0 {
		w.grace = 30 * time.Second // and pods stay Terminating on unreachable nodes
	}
	for i := range 6 + r.IntN(5) {
		w.nodes = append(w.nodes, fmt.Sprint("n", i))
	}
	for i := range 14 + r.IntN(7) {
		w.pods = append(w.pods, fmt.Sprint("p", i))
	}
	return w
}

// zoneOf returns the zone of the node name: zones alternate with the nodes' numbers.
func (w *world) zoneOf(name string) string {
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "n"))
	return fmt.Sprint("z", i%2)
}

// namespaceOf returns the namespace of the pod name.
func namespaceOf(name string) string {
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "p"))
	return fmt.Sprint("ns", i%2)
}

// nodeNames returns every node name used.
func (w *world) nodeNames() []string {
	w.namesMu.RLock()
	defer w.namesMu.RUnlock()
	return slices.Clone(w.nodes)
}

// addNode adds the name of a new node, and returns it.
func (w *world) addNode() string {
	w.namesMu.Lock()
	defer w.namesMu.Unlock()
	name := fmt.Sprint("n", len(w.nodes))
	w.nodes = append(w.nodes, name)
	return name
}

func (w *world) pod(name string) *v1.Pod {
	p, _ := w.cache.Pod(namespaceOf(name), name)
	return p
}

func (w *world) node(name string) *v1.Node {
	n, _ := w.cache.Node(name)
	return n
}

// run builds the cluster, starts the SUT, takes the steps, and lets it drain.
func (w *world) run() {
	for _, n := range w.nodes {
		w.cache.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{v1.LabelTopologyZone: w.zoneOf(n)}}})
	}
	for _, p := range w.pods {
		if w.r.IntN(4) != 0 {
			w.createPod(p)
		}
	}
	w.start()
	for step := range modelSteps {
		w.ck.log(w.clk.Now(), "step %d", step)
		w.ck.setPrev(w.snapshot())
		if step == modelSteps/3 { // every run has an Engine started in the middle of an outage
			w.deliver(w.outage(), nil)
			synctest.Wait()
			w.restart()
		} else {
			w.randomStep()
		}
		synctest.Wait()
		w.checkIdle(fmt.Sprint("step ", step))
	}
	w.drain("standing still", false)
	w.lift()
	w.drain("lifted", true)
	w.stop()
}

// randomStep does one random thing.
func (w *world) randomStep() {
	switch n := w.r.IntN(100); {
	case n < 45:
		d := time.Duration(w.r.IntN(60)) * time.Second
		w.ck.log(w.clk.Now(), "step the clock %v", d)
		w.clk.Step(d)
	case n < 80:
		var nodes, pods []string
		for range 1 + w.r.IntN(3) {
			nn, pp := w.mutate()
			nodes, pods = append(nodes, nn...), append(pods, pp...)
		}
		w.deliver(nodes, pods)
	case n < 85:
		w.restart()
	case n < 93:
		name, answer := w.pods[w.r.IntN(len(w.pods))], w.r.IntN(4)
		w.ck.log(w.clk.Now(), "the Actuator answers %s with %s", name, []string{"ok", "a failure", "overload", "a hang"}[answer])
		w.mu.Lock()
		w.answers[name] = answer
		w.mu.Unlock()
	default:
		w.fail.Store(!w.fail.Load())
		w.ck.log(w.clk.Now(), "the Source fails: %v", w.fail.Load())
	}
}

// mutate makes one random change to the cluster and returns the names of the nodes and
// pods it changed.
func (w *world) mutate() (nodes, pods []string) {
	r := w.r
	node := w.nodes[r.IntN(len(w.nodes))]
	switch n := r.IntN(100); {
	case n < 15: // one node's taints
		var keys []string
		for _, k := range modelKeys {
			if r.IntN(3) == 0 {
				keys = append(keys, k)
			}
		}
		if w.setTaints(node, keys) {
			nodes = append(nodes, node)
		}
	case n < 25:
		nodes = w.outage()
	case n < 33: // some nodes recover
		for _, name := range w.nodes {
			if r.IntN(2) == 0 && w.setTaints(name, nil) {
				nodes = append(nodes, name)
			}
		}
	case n < 38: // a node deleted, or back
		if w.node(node) != nil {
			w.cache.DeleteNode(node)
		} else {
			w.cache.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{v1.LabelTopologyZone: w.zoneOf(node)}}})
		}
		nodes = append(nodes, node)
	case n < 43: // an operator confirms, or takes it back
		cur := w.node(node)
		if cur == nil {
			break
		}
		nn := cur.DeepCopy()
		nn.Annotations = nil
		if r.IntN(2) == 0 {
			nn.Annotations = map[string]string{eviction.ConfirmAnnotation: []string{"*", unreachable, notReady + "," + unreachable}[r.IntN(3)]}
		}
		w.cache.SetNode(nn)
		nodes = append(nodes, node)
	case n < 70: // a pod created (a new one under a name that is free)
		name := w.pods[r.IntN(len(w.pods))]
		if w.pod(name) == nil {
			w.createPod(name)
			pods = append(pods, name)
		}
	case n < 80: // a pod deleted by its owner
		name := w.pods[r.IntN(len(w.pods))]
		if w.cache.DeletePod(namespaceOf(name), name) != nil {
			pods = append(pods, name)
		}
	case n < 85: // a pod finishes
		name := w.pods[r.IntN(len(w.pods))]
		if cur := w.pod(name); cur != nil && cur.DeletionTimestamp == nil {
			p := cur.DeepCopy()
			p.Status.Phase = v1.PodSucceeded
			w.cache.SetPod(p)
			pods = append(pods, name)
		}
	default: // the kubelets finish the pods whose grace is over, where they can
		pods = w.sweep()
	}
	return nodes, pods
}

// outage taints most nodes unreachable, 10 minutes ago, and returns those it changed.
func (w *world) outage() (nodes []string) {
	for _, name := range w.nodeNames() {
		if w.r.IntN(10) < 7 && w.addTaint(name, unreachable, w.clk.Now().Add(-10*time.Minute)) {
			nodes = append(nodes, name)
		}
	}
	return nodes
}

// setTaints gives node NoExecute taints of keys: those it had keep their TimeAdded, new ones
// were added up to 10 minutes ago. It reports whether the node changed.
func (w *world) setTaints(node string, keys []string) bool {
	cur := w.node(node)
	if cur == nil {
		return false
	}
	var taints []v1.Taint
	for _, k := range keys {
		i := slices.IndexFunc(cur.Spec.Taints, func(t v1.Taint) bool { return t.Key == k })
		if i >= 0 {
			taints = append(taints, cur.Spec.Taints[i])
			continue
		}
		taints = append(taints, noExecute(k, w.clk.Now().Add(-time.Duration(w.r.IntN(600))*time.Second)))
	}
	if slices.EqualFunc(taints, cur.Spec.Taints, func(a, b v1.Taint) bool { return a.Key == b.Key }) {
		return false
	}
	n := cur.DeepCopy()
	n.Spec.Taints = taints
	w.cache.SetNode(n)
	return true
}

// addTaint adds a NoExecute taint of key, added at added, to node if it has none; it reports
// whether the node changed.
func (w *world) addTaint(node, key string, added time.Time) bool {
	cur := w.node(node)
	if cur == nil || slices.ContainsFunc(cur.Spec.Taints, func(t v1.Taint) bool { return t.Key == key }) {
		return false
	}
	n := cur.DeepCopy()
	n.Spec.Taints = append(n.Spec.Taints, noExecute(key, added))
	w.cache.SetNode(n)
	return true
}

// createPod creates the pod name, with a new UID, on a random node, with random
// tolerations and owner, created now.
func (w *world) createPod(name string) {
	r := w.r
	w.nextUID++
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespaceOf(name), Name: name, UID: types.UID(fmt.Sprintf("%s-%d", name, w.nextUID)),
			CreationTimestamp: metav1.NewTime(w.clk.Now())},
		Spec:   v1.PodSpec{NodeName: w.nodes[r.IntN(len(w.nodes))]},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
	switch r.IntN(8) {
	case 0, 1:
	case 2, 3:
		p.Spec.Tolerations = []v1.Toleration{tolFor(unreachable, 300), tolFor(notReady, 300)}
	case 4:
		p.Spec.Tolerations = []v1.Toleration{tolFor(unreachable, 30)}
	case 5:
		p.Spec.Tolerations = []v1.Toleration{tolForever(unreachable)}
	case 6:
		p.Spec.Tolerations = []v1.Toleration{tolFor("example.com/maintenance", 60), tolFor(unreachable, 0)}
	default:
		p.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
	}
	if owner := []string{"", "db", "web"}[r.IntN(3)]; owner != "" {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: owner, UID: types.UID("owner-" + owner), Controller: &yes}}
	}
	w.cache.SetPod(p)
}

// sweep removes the pods whose deletion's grace period is over, unless their node is
// unreachable (no kubelet confirms them there: they stay Terminating), and returns their
// names.
func (w *world) sweep() []string {
	var out []string
	for _, name := range w.pods {
		p := w.pod(name)
		if p == nil || p.DeletionTimestamp == nil || p.DeletionTimestamp.After(w.clk.Now()) {
			continue
		}
		if n := w.node(p.Spec.NodeName); n != nil && slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == unreachable }) {
			continue
		}
		w.cache.DeletePod(p.Namespace, p.Name)
		out = append(out, name)
	}
	return out
}

// deliver hands on the changes of nodes and pods as informers do: in any order, targets
// before or after their holders, each object's changes merged into one update, some
// processed before the next arrives. Then it tells the SUT that the counts may have
// changed.
func (w *world) deliver(nodes, pods []string) {
	type item struct {
		name string
		node bool
	}
	var items []item
	for _, n := range nodes {
		if !slices.Contains(items, item{n, true}) {
			items = append(items, item{n, true})
		}
	}
	for _, p := range pods {
		if !slices.Contains(items, item{p, false}) {
			items = append(items, item{p, false})
		}
	}
	w.r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	if w.r.IntN(2) == 0 { // pods first, often the worst for the budgets that count holders
		slices.SortStableFunc(items, func(a, b item) int {
			switch {
			case a.node == b.node:
				return 0
			case a.node:
				return 1
			}
			return -1
		})
	}
	for _, it := range items {
		if it.node {
			w.deliverNode(it.name)
		} else {
			w.deliverPod(it.name)
		}
		if w.r.IntN(2) == 0 {
			synctest.Wait()
		}
	}
	w.mu.Lock()
	sut := w.sut
	w.mu.Unlock()
	sut.recounted()
}

// deliverNode hands on node name's change since its last delivery, if any.
func (w *world) deliverNode(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cur, old := w.node(name), w.gotNodes[name]
	if cur == old {
		return
	}
	if cur == nil {
		delete(w.gotNodes, name)
	} else {
		w.gotNodes[name] = cur
	}
	w.ck.log(w.clk.Now(), "deliver node %s: %s", name, describeNode(cur))
	w.sut.NodeUpdated(old, cur)
}

// deliverPod hands on pod name's change since its last delivery, if any: a pod replaced by
// another of the same name is a deletion and an addition.
func (w *world) deliverPod(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deliverPodLocked(name)
}

func (w *world) deliverPodLocked(name string) {
	cur, old := w.pod(name), w.gotPods[name]
	if cur == old {
		return
	}
	if cur == nil {
		delete(w.gotPods, name)
	} else {
		w.gotPods[name] = cur
	}
	if old != nil && cur != nil && old.UID != cur.UID {
		w.sut.PodUpdated(old, nil)
		old = nil
	}
	w.ck.log(w.clk.Now(), "deliver pod %s: %s", name, describePod(cur))
	w.sut.PodUpdated(old, cur)
}

// start starts a new incarnation of the SUT, runs it, and feeds it the cluster as informers
// feed one that starts: every node and pod an addition, in any order (pods first half the
// time), some processed before the next arrives; then tells it that it has synced.
func (w *world) start() {
	w.mu.Lock()
	w.inc++
	inc := w.inc
	w.mu.Unlock()
	w.ck.restart(inc)
	obs := &modelObserver{Observer: &evictiontest.Observer{}, w: w, inc: inc}
	opts := w.opts
	opts.Clock, opts.Observer = w.clk, obs
	sut, err := w.v.new(w, w.deleter(inc), flakyCache{c: w.cache, fail: &w.fail}, opts)
	if err != nil {
		w.t.Fatalf("New: %v", err)
	}
	w.mu.Lock()
	w.sut, w.obs = sut, obs
	w.gotNodes, w.gotPods = map[string]*v1.Node{}, map[string]*v1.Pod{}
	w.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan error, 1)
	go func() { w.done <- sut.Run(ctx) }()
	w.deliver(w.nodeNames(), w.pods)
	synctest.Wait()
	synced(sut)
	w.ck.synced()
	w.ck.log(w.clk.Now(), "incarnation %d fed and synced", inc)
	synctest.Wait()
}

// stop stops the SUT and waits for Run, which must return context.Canceled.
func (w *world) stop() {
	w.cancel()
	if err := <-w.done; !errors.Is(err, context.Canceled) {
		w.ck.violate("run", "Run returned %v, want context.Canceled", err)
	}
}

// restart stops the SUT and starts a new one on the same cluster, nothing carried over.
func (w *world) restart() {
	w.ck.log(w.clk.Now(), "restart")
	w.stop()
	w.start()
}

// deleter is the API server as incarnation inc's Deleter calls it: it checks the
// invariants at the call, then answers as the pod's answer says; a deletion it accepts
// marks the pod Terminating until its grace period ends (or removes it, with no grace), and
// the informer hands that on.
func (w *world) deleter(inc int) eviction.Deleter {
	return eviction.DeleterFunc(func(ctx context.Context, ref eviction.PodRef) error {
		w.ck.called(w, inc, ref)
		w.mu.Lock()
		answer := w.answers[ref.Name]
		w.mu.Unlock()
		switch answer {
		case answerFail:
			return errors.New("the API server refused")
		case answerOverload:
			return fmt.Errorf("throttled: %w", engine.ErrOverload)
		case answerHang:
			<-ctx.Done()
			return ctx.Err()
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		cur := w.pod(ref.Name)
		if cur == nil || cur.UID != ref.UID {
			return eviction.ErrPodGone
		}
		switch {
		case w.grace == 0:
			w.cache.DeletePod(cur.Namespace, cur.Name)
		case cur.DeletionTimestamp == nil:
			p := cur.DeepCopy()
			end := metav1.NewTime(w.clk.Now().Add(w.grace))
			secs := int64(w.grace / time.Second)
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &end, &secs
			w.cache.SetPod(p)
		}
		w.ck.succeeded(inc, ref)
		if w.inc == inc {
			w.deliverPodLocked(ref.Name)
		}
		return nil
	})
}

// drain lets the SUT work with the world standing still but for the kubelets (each
// Actuator call answered, no lookup failing), for up to an hour of fake time, and checks
// that every target due and held by neither the Brake nor Confirm in the Source was acted
// on; all, when lifted.
func (w *world) drain(phase string, lifted bool) {
	w.mu.Lock()
	clear(w.answers)
	w.mu.Unlock()
	w.fail.Store(false)
	for end := w.clk.Now().Add(time.Hour); w.clk.Now().Before(end); {
		w.ck.setPrev(w.snapshot())
		w.deliver(nil, w.sweep())
		w.clk.Step(10 * time.Second)
		synctest.Wait()
		w.checkIdle(phase)
		if len(w.starved(lifted)) == 0 {
			return
		}
	}
	s, p := w.sut.Stats(), w.sut.Pending()
	for _, name := range w.starved(lifted) {
		w.ck.violate("liveness", "%s: %s is due and no budget holds it in the Source (%s), and it is not acted on after an hour; stats %+v, pending %v", phase, name, describeKeys(w.snapshot()), s, p)
	}
}

// starved returns the pods due now that neither the Brake nor Confirm holds in the Source
// (when not lifted), not yet acted on.
func (w *world) starved(lifted bool) []string {
	now, s := w.clk.Now(), w.snapshot()
	var out []string
	for _, name := range w.pods {
		p := w.pod(name)
		if p == nil || eviction.LeavingReason(p) != "" {
			continue
		}
		causes := w.causes(p, now)
		if len(causes) == 0 {
			continue
		}
		if !lifted && (w.ck.brakeHolds(w, s, s, causes, true) || w.ck.confirmHolds(w, s, s, causes)) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// lift adds healthy nodes, twice as many as each zone has, so that no key is carried by
// more than a third of the nodes of any zone, and has every node confirm every key; the
// world then stands still again.
func (w *world) lift() {
	w.ck.setPrev(w.snapshot())
	var nodes []string
	for _, n := range w.nodes {
		if cur := w.node(n); cur != nil {
			nn := cur.DeepCopy()
			nn.Annotations = map[string]string{eviction.ConfirmAnnotation: "*"}
			w.cache.SetNode(nn)
			nodes = append(nodes, n)
		}
	}
	for range 2 * len(w.nodeNames()) {
		name := w.addNode()
		w.cache.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelTopologyZone: w.zoneOf(name)},
			Annotations: map[string]string{eviction.ConfirmAnnotation: "*"}}})
		nodes = append(nodes, name)
	}
	w.deliver(nodes, nil)
	synctest.Wait()
}

// checkIdle checks the idle SUT: what the Actuator calls found, and Stats against Pending.
func (w *world) checkIdle(when string) {
	w.mu.Lock()
	sut, obs := w.sut, w.obs
	w.mu.Unlock()
	s, pending := sut.Stats(), sut.Pending()
	if s.Pending() != len(pending) {
		w.ck.violate("stats", "%s: Stats().Pending() = %d (%+v), len(Pending()) = %d", when, s.Pending(), s, len(pending))
	}
	delayed := map[engine.Reason]int{}
	for _, p := range pending {
		if p.Delayed != "" {
			delayed[p.Delayed]++
		}
	}
	for r, n := range s.Delayed {
		if n != delayed[r] {
			w.ck.violate("stats", "%s: Stats().Delayed[%s] = %d, Pending() lists %d", when, r, n, delayed[r])
		}
	}
	events := obs.Events()
	for _, key := range evictiontest.Targets(events) {
		if _, err := evictiontest.CheckContract(evictiontest.EventsOf(events, key), true); err != nil {
			w.ck.violate("contract", "%s: %s: %v", when, key, err)
		}
	}
}

// report fails the test with the invariants broken, a few examples of each, and how to
// replay the seed.
func (w *world) report() {
	w.ck.mu.Lock()
	defer w.ck.mu.Unlock()
	if len(w.ck.bad) == 0 {
		return
	}
	var names []string
	for name := range w.ck.bad {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		msgs := w.ck.bad[name]
		w.t.Errorf("invariant %s broken %d times, first: %s", name, len(msgs), strings.Join(msgs[:min(3, len(msgs))], "; "))
	}
	from, to := max(0, w.ck.firstBad-60), min(len(w.ck.trace), w.ck.firstBad+5)
	if os.Getenv(modelTraceEnv) == "full" {
		from, to = 0, len(w.ck.trace)
	}
	w.t.Logf("what the run did before the first violation:\n\t%s", strings.Join(w.ck.trace[from:to], "\n\t"))
	if last := max(to, len(w.ck.trace)-40); last < len(w.ck.trace) {
		w.t.Logf("and last:\n\t%s", strings.Join(w.ck.trace[last:], "\n\t"))
	}
	w.t.Errorf("budgets %+v; replay with %s=%d go test -race -run 'TestBudgetModel/%s/' ./eviction", w.budgets(), modelSeedEnv, w.seed, w.v.name)
}

// budgets says which budgets the run has on.
func (w *world) budgets() string {
	o := w.opts
	return fmt.Sprintf("Brake %+v, InFlight %+v, NamespaceLimit %+v, OwnerLimit %+v, Confirm {%v %d}, RateLimit %+v, LoopDamping %v, grace %v",
		o.Brake, o.InFlight, o.NamespaceLimit, o.OwnerLimit, o.Confirm.Fraction, o.Confirm.MinTargets, o.RateLimit, o.LoopDamping.Window, w.grace)
}

// --- the truth

// snapshot is the truth at an instant, as the budgets count it.
type snapshot struct {
	nodes   map[string]*v1.Node              // the nodes, by name
	pods    map[types.NamespacedName]*v1.Pod // the pods, by key
	keys    map[string][]string              // node -> the keys of its NoExecute taints
	confirm map[string]string                // node -> its ConfirmAnnotation
	counted map[types.UID]bool               // the pods bound to a node and not leaving
	evicts  map[string]map[types.UID]bool    // taint key -> the counted pods on a node carrying it that do not tolerate it forever
}

func (w *world) snapshot() snapshot {
	s := snapshot{nodes: map[string]*v1.Node{}, pods: map[types.NamespacedName]*v1.Pod{},
		keys: map[string][]string{}, confirm: map[string]string{}, counted: map[types.UID]bool{}, evicts: map[string]map[types.UID]bool{}}
	for _, name := range w.nodeNames() {
		n := w.node(name)
		if n == nil {
			continue
		}
		s.nodes[name] = n
		s.keys[name] = []string{}
		for _, t := range tolerations.NoExecuteTaints(n.Spec.Taints) {
			if !slices.Contains(s.keys[name], t.Key) {
				s.keys[name] = append(s.keys[name], t.Key)
			}
		}
		s.confirm[name] = n.Annotations[eviction.ConfirmAnnotation]
	}
	for _, name := range w.pods {
		p := w.pod(name)
		if p != nil {
			s.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
		}
		if p == nil || p.Spec.NodeName == "" || eviction.LeavingReason(p) != "" {
			continue
		}
		s.counted[p.UID] = true
		n := w.node(p.Spec.NodeName)
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
	return s
}

// cause is a NoExecute taint that makes a pod due: its node and key.
type cause struct{ node, key string }

// causes returns the NoExecute taints of p's node that make it due at now: not tolerated,
// or tolerated for a time that has run out since the taint's TimeAdded.
func (w *world) causes(p *v1.Pod, now time.Time) []cause {
	return causesOn(p, w.node(p.Spec.NodeName), now)
}

// causesOn returns the NoExecute taints of n, p's node (nil: none), that make p due at now.
func causesOn(p *v1.Pod, n *v1.Node, now time.Time) []cause {
	if n == nil {
		return nil
	}
	var out []cause
	taints := tolerations.NoExecuteTaints(n.Spec.Taints)
	for i := range taints {
		if tolerations.Deadline(taints[i:i+1], p.Spec.Tolerations, now, now, tolerations.Options{}).Verdict == tolerations.EvictNow {
			out = append(out, cause{n.Name, taints[i].Key})
		}
	}
	return out
}

// --- the checks

// checker keeps what the checks need of the current incarnation, and what broke.
type checker struct {
	mu      sync.Mutex
	inc     int
	feeding bool                  // the incarnation is being fed the cluster, and not yet told it has synced
	prev    snapshot              // the truth before the updates being delivered
	flights map[flightKey]*flight // the evictions this incarnation acted on
	lets    []letGo               // the evictions it let go, in order
	bad     map[string][]string   // invariant -> what broke it
	trace   []string              // what the run did, for a failure's report
	// firstBad is the length of the trace at the first violation.
	firstBad int
}

// log adds a line to the trace.
func (c *checker) log(now time.Time, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logLocked(now, format, args...)
}

func (c *checker) logLocked(now time.Time, format string, args ...any) {
	c.trace = append(c.trace, fmt.Sprintf("+%v ", now.Sub(t0))+fmt.Sprintf(format, args...))
}

type flightKey struct {
	key types.NamespacedName
	uid types.UID
}

// flight is an eviction acted on: on which node, whether a call of it succeeded (the
// Actuator did its work), and whether it was reported closed without an action.
type flight struct {
	node      string
	succeeded bool
	closed    bool
	// held: a budget that holds while a condition lasts (the brake, Confirm, Synced) holds
	// its retry, which is then not in flight (its calls did nothing), and its next call is
	// let go anew.
	held bool
}

// letGo is an eviction's first Actuator call, for the windows.
type letGo struct {
	at        time.Time
	namespace string
	owner     engine.Owner
}

func (c *checker) violate(invariant, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violateLocked(invariant, format, args...)
}

func (c *checker) violateLocked(invariant, format string, args ...any) {
	if c.bad == nil {
		c.bad = map[string][]string{}
		c.firstBad = len(c.trace)
	}
	c.bad[invariant] = append(c.bad[invariant], fmt.Sprintf(format, args...))
}

func (c *checker) setPrev(s snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prev = s
}

func (c *checker) restart(inc int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inc, c.flights, c.lets, c.feeding = inc, map[flightKey]*flight{}, nil, true
}

// synced records that the incarnation has been told it has synced.
func (c *checker) synced() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.feeding = false
}

// closed records that incarnation inc closed the eviction of ref (Cancelled or Skipped).
func (c *checker) closed(inc int, ref eviction.PodRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.flights[flightKey{ref.Key(), ref.UID}]; f != nil && inc == c.inc {
		f.closed = true
	}
}

// called checks the invariants at incarnation inc's Actuator call for ref.
func (c *checker) called(w *world, inc int, ref eviction.PodRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := w.clk.Now()
	at := fmt.Sprintf("+%v (incarnation %d, synced)", now.Sub(t0), inc)
	if c.feeding {
		at = fmt.Sprintf("+%v (incarnation %d, being fed, not synced)", now.Sub(t0), inc)
	}
	if inc != c.inc {
		c.violateLocked("run", "%s: a stopped incarnation acted on %s", at, ref)
		return
	}
	p := w.pod(ref.Name)
	c.logLocked(now, "incarnation %d calls the Actuator for %s (%s)", inc, ref, ref.UID)
	switch {
	case p == nil || p.UID != ref.UID:
		c.violateLocked("due", "%s: acted on %s (%s), which the cluster does not have", at, ref, ref.UID)
		return
	case eviction.LeavingReason(p) != "":
		c.violateLocked("due", "%s: acted on %s, which is leaving (%s)", at, ref, eviction.LeavingReason(p))
		return
	case p.Spec.NodeName != ref.Holder:
		c.violateLocked("due", "%s: acted on %s from %s, bound to %s", at, ref, ref.Holder, p.Spec.NodeName)
		return
	}
	causes := w.causes(p, now)
	if len(causes) == 0 {
		c.violateLocked("due", "%s: acted on %s, which is not due", at, ref)
		return
	}
	key := flightKey{ref.Key(), ref.UID}
	f := c.flights[key]
	first := f == nil || f.closed || f.held
	suffix := ""
	if !first {
		suffix = "-retry"
	}
	cur := w.snapshot()
	if !first && !checkRetries {
		return
	}
	if c.brakeHolds(w, c.prev, cur, causes, false) {
		c.violateLocked("brake"+suffix, "%s: acted on %s, due to %v, while the brake's rule holds in the cluster (%s)", at, ref, causes, describeKeys(cur))
	}
	if c.confirmHolds(w, c.prev, cur, causes) {
		c.violateLocked("confirm"+suffix, "%s: acted on %s, due to %v, while Confirm holds each of them in the cluster (%d targets)", at, ref, causes, len(cur.counted))
	}
	if !first {
		return
	}
	if max := w.opts.InFlight.Max; max > 0 {
		if n := c.inFlight(c.prev, cur, now); n+1 > max {
			c.violateLocked("inflight", "%s: acted on %s with %d in flight already, Max %d", at, ref, n, max)
		}
	}
	owner := eviction.PodOwner(p)
	c.lets = append(c.lets, letGo{at: now, namespace: p.Namespace, owner: owner})
	if win := w.opts.NamespaceLimit; win.Max > 0 {
		if n := c.within(now, win.Per, func(l letGo) bool { return l.namespace == p.Namespace }); n > win.Max {
			c.violateLocked("namespace-window", "%s: %s is the %d-th eviction of %s within %v, Max %d", at, ref, n, p.Namespace, win.Per, win.Max)
		}
	}
	if win := w.opts.OwnerLimit; win.Max > 0 && owner != (engine.Owner{}) {
		if n := c.within(now, win.Per, func(l letGo) bool { return l.namespace == p.Namespace && l.owner == owner }); n > win.Max {
			c.violateLocked("owner-window", "%s: %s is the %d-th eviction of %s within %v, Max %d", at, ref, n, owner, win.Per, win.Max)
		}
	}
	c.flights[key] = &flight{node: ref.Holder}
}

// inFlight counts the evictions in flight at now, by InFlight's definition, from the truth
// before (prev) and now (cur) of the updates being delivered: one acted on (a call
// succeeded) while its target is there, with its UID, bound to the node acted on, and not
// leaving with its GoneBy passed; one whose calls have not succeeded while, besides, its
// target is not leaving and due, both before and now (the Engine closes it, without an
// action, once it sees otherwise; and it reports that only after it has let the next one
// go, so the report alone comes too late).
func (c *checker) inFlight(prev, cur snapshot, now time.Time) int {
	n := 0
	for k, f := range c.flights {
		p := cur.pods[k.key]
		switch {
		case f.closed, f.held && !f.succeeded, p == nil || p.UID != k.uid || p.Spec.NodeName != f.node:
		case f.succeeded && (p.DeletionTimestamp == nil || p.DeletionTimestamp.After(now)):
			n++
		case !f.succeeded && stillDue(prev, k, now) && stillDue(cur, k, now):
			n++
		}
	}
	return n
}

// stillDue reports whether the pod k (with its UID) is, in s, not leaving and due at now.
func stillDue(s snapshot, k flightKey, now time.Time) bool {
	p := s.pods[k.key]
	return p != nil && p.UID == k.uid && eviction.LeavingReason(p) == "" && len(causesOn(p, s.nodes[p.Spec.NodeName], now)) > 0
}

// held records that incarnation inc holds the retry of ref's eviction while a condition
// lasts: it is not in flight.
func (c *checker) held(inc int, ref eviction.PodRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.flights[flightKey{ref.Key(), ref.UID}]; f != nil && inc == c.inc && !f.succeeded {
		f.held = true
	}
}

// succeeded records that incarnation inc's call for ref did its work.
func (c *checker) succeeded(inc int, ref eviction.PodRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.flights[flightKey{ref.Key(), ref.UID}]; f != nil && inc == c.inc {
		f.succeeded = true
	}
}

// within counts the evictions let go within (now-per, now] that match.
func (c *checker) within(now time.Time, per time.Duration, match func(letGo) bool) int {
	n := 0
	for _, l := range c.lets {
		if l.at.After(now.Add(-per)) && match(l) {
			n++
		}
	}
	return n
}

// brakeHolds reports whether the brake's rule holds, in both prev and cur, for a key of
// one of causes: more than the fraction of the holders (of all, or of the cause's zone),
// counting as carrying the key only the holders that carry it in both, and among all
// holders every holder of either. orAt counts exactly the fraction too: the brake stays as
// it was there, so that a fleet hovering at it does not flap.
func (c *checker) brakeHolds(w *world, prev, cur snapshot, causes []cause, orAt bool) bool {
	b := w.opts.Brake
	for _, cs := range causes {
		zone := w.zoneOf(cs.node)
		carry, all, carryZ, allZ := 0, 0, 0, 0
		for name := range union(prev.keys, cur.keys) {
			in := w.zoneOf(name) == zone
			all++
			if in {
				allZ++
			}
			if pk, ok := prev.keys[name]; ok && slices.Contains(pk, cs.key) && slices.Contains(cur.keys[name], cs.key) {
				carry++
				if in {
					carryZ++
				}
			}
		}
		if over(carry, all, b.Fraction, orAt) || over(carryZ, allZ, b.ZoneFraction, orAt) {
			return true
		}
	}
	return false
}

// confirmHolds reports whether Confirm holds every one of causes in both prev and cur: its
// key would evict more than the fraction of all targets (at least MinTargets), counting
// among those it would evict the pods it would in both, and among all targets every pod
// counted in either, and the cause's node confirms the key in neither.
func (c *checker) confirmHolds(w *world, prev, cur snapshot, causes []cause) bool {
	conf := w.opts.Confirm
	if conf.Fraction <= 0 {
		return false
	}
	targets := len(union(prev.counted, cur.counted))
	for _, cs := range causes {
		evicts := 0
		for uid := range cur.evicts[cs.key] {
			if prev.evicts[cs.key][uid] {
				evicts++
			}
		}
		if !conf.Exceeds(evicts, targets) || eviction.Confirms(prev.confirm[cs.node], cs.key) || eviction.Confirms(cur.confirm[cs.node], cs.key) {
			return false
		}
	}
	return true
}

// over reports whether n of all is over fraction (0: no rule), or at it with orAt.
func over(n, all int, fraction float64, orAt bool) bool {
	return fraction > 0 && (float64(n) > fraction*float64(all) || orAt && float64(n) == fraction*float64(all))
}

// union returns the keys of a and b.
func union[K comparable, V any](a, b map[K]V) map[K]bool {
	out := make(map[K]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// describeNode says what a budget reads of node: its NoExecute taint keys and its
// confirmation.
func describeNode(n *v1.Node) string {
	if n == nil {
		return "deleted"
	}
	var keys []string
	for _, t := range tolerations.NoExecuteTaints(n.Spec.Taints) {
		keys = append(keys, t.Key+"@+"+t.TimeAdded.Sub(t0).String())
	}
	return fmt.Sprintf("taints %v, confirms %q", keys, n.Annotations[eviction.ConfirmAnnotation])
}

// describePod says what a budget reads of pod.
func describePod(p *v1.Pod) string {
	if p == nil {
		return "deleted"
	}
	var tols []string
	for _, t := range p.Spec.Tolerations {
		s := t.Key
		if t.TolerationSeconds != nil {
			s += fmt.Sprint(":", *t.TolerationSeconds)
		}
		tols = append(tols, s)
	}
	return fmt.Sprintf("%s on %s, tolerates %v, leaving %q, owner %v", p.UID, p.Spec.NodeName, tols, eviction.LeavingReason(p), eviction.PodOwner(p))
}

// describeKeys says how many nodes carry each key, of how many.
func describeKeys(s snapshot) string {
	counts := map[string]int{}
	for _, keys := range s.keys {
		for _, k := range keys {
			counts[k]++
		}
	}
	var parts []string
	for _, k := range modelKeys {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s on %d of %d nodes", k, counts[k], len(s.keys)))
		}
	}
	return strings.Join(parts, ", ")
}

// modelObserver records an incarnation's reports, and tells the checker of the evictions it
// closes without an action.
type modelObserver struct {
	*evictiontest.Observer
	w   *world
	inc int
}

func (o *modelObserver) Delayed(ref eviction.PodRef, reason eviction.Reason) {
	o.Observer.Delayed(ref, reason)
	if reason == eviction.ReasonPaused || reason == eviction.ReasonUnconfirmed || reason == engine.ReasonNotSynced {
		o.w.ck.held(o.inc, ref)
	}
}

func (o *modelObserver) Cancelled(ref eviction.PodRef, reason eviction.Reason) {
	o.Observer.Cancelled(ref, reason)
	o.w.ck.closed(o.inc, ref)
}

func (o *modelObserver) Skipped(ref eviction.PodRef, reason eviction.Reason) {
	o.Observer.Skipped(ref, reason)
	o.w.ck.closed(o.inc, ref)
}
