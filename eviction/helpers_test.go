package eviction_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// t0 is the fake clock's start in every test.
var t0 = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

// ns is the namespace of every test pod.
const ns = "default"

// rel formats t relative to t0, as "+5m0s".
func rel(t time.Time) string {
	if t.IsZero() {
		return "zero"
	}
	if d := t.Sub(t0); d >= 0 {
		return "+" + d.String()
	}
	return t.Sub(t0).String()
}

// --- pods

type podOption func(*v1.Pod)

// newPod returns a running pod ns/name bound to node ("" for unbound), with UID name+"-1".
func newPod(name, node string, opts ...podOption) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-1")},
		Spec:       v1.PodSpec{NodeName: node},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withUID(uid string) podOption { return func(p *v1.Pod) { p.UID = types.UID(uid) } }

func withTolerations(tols ...v1.Toleration) podOption {
	return func(p *v1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, tols...) }
}

func inPhase(phase v1.PodPhase) podOption { return func(p *v1.Pod) { p.Status.Phase = phase } }

func terminating() podOption {
	return func(p *v1.Pod) { ts := metav1.NewTime(t0); p.DeletionTimestamp = &ts }
}

// tolFor tolerates every NoExecute taint with key for secs seconds.
func tolFor(key string, secs int64) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs}
}

// tolForever tolerates every NoExecute taint with key forever.
func tolForever(key string) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
}

// --- nodes

// newNode returns a node with the given taints.
func newNode(name string, taints ...v1.Taint) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: taints}}
}

// noExecute returns a NoExecute taint with key, added at added (nil TimeAdded when zero).
func noExecute(key string, added time.Time) v1.Taint {
	t := v1.Taint{Key: key, Value: "true", Effect: v1.TaintEffectNoExecute}
	if !added.IsZero() {
		ta := metav1.NewTime(added)
		t.TimeAdded = &ta
	}
	return t
}

func noSchedule(key string) v1.Taint {
	return v1.Taint{Key: key, Value: "true", Effect: v1.TaintEffectNoSchedule}
}

// --- harness

// deletion is one Deleter call, with the fake time it was made at.
type deletion struct {
	Ref eviction.PodRef
	At  time.Time
}

func (d deletion) String() string { return d.Ref.Name + "@" + rel(d.At) }

// harness is a Manager on a fake clock with an in-memory cache, a recording Deleter and a
// recording Observer. It must be made inside synctest.Test.
type harness struct {
	t     *testing.T
	clk   *testclock.FakeClock
	cache *evictiontest.Cache
	del   *evictiontest.Deleter
	obs   *evictiontest.Observer
	m     manager

	mu        sync.Mutex
	deletions []deletion
	deleteFn  func(ctx context.Context, ref eviction.PodRef) error

	stopFn func()
}

// newHarness makes a Manager with opts, its Clock, Observer (unless set) and Deleter filled
// in (none in DryRun mode). It does not start it.
func newHarness(t *testing.T, opts eviction.Options) *harness {
	t.Helper()
	h := &harness{
		t:     t,
		clk:   testclock.NewFakeClock(t0),
		cache: &evictiontest.Cache{},
		del:   &evictiontest.Deleter{},
		obs:   &evictiontest.Observer{},
	}
	h.del.Func = func(ctx context.Context, ref eviction.PodRef) error {
		h.mu.Lock()
		h.deletions = append(h.deletions, deletion{Ref: ref, At: h.clk.Now()})
		f := h.deleteFn
		h.mu.Unlock()
		if f != nil {
			return f(ctx, ref)
		}
		return nil
	}
	opts.Clock = h.clk
	if opts.Observer == nil {
		opts.Observer = h.obs
	}
	var d eviction.Deleter = h.del
	if opts.DryRun {
		d = nil
	}
	m, err := newManager(t, d, h.cache, opts)
	if err != nil {
		t.Fatalf("New: got error %v, want none", err)
	}
	h.m = m
	t.Cleanup(h.stop)
	return h
}

// run makes a harness and starts its Manager.
func run(t *testing.T, opts eviction.Options) *harness {
	t.Helper()
	h := runUnsynced(t, opts)
	h.m.Synced() // the tests feed their clusters live, as a cluster after the informers synced
	return h
}

// runUnsynced is run without telling the Manager that it has seen every node and pod: as
// a Manager whose informers are still listing.
func runUnsynced(t *testing.T, opts eviction.Options) *harness {
	t.Helper()
	h := newHarness(t, opts)
	h.start()
	return h
}

// start runs the Manager and waits until it is idle.
func (h *harness) start() {
	h.stopFn = startManager(h.t, h.m)
}

// stop stops the Manager (see startManager). It may be called more than once.
func (h *harness) stop() {
	h.t.Helper()
	if h.stopFn != nil {
		h.stopFn()
		h.stopFn = nil
	}
}

// newFakeClock returns a fake clock at t0.
func newFakeClock() *testclock.FakeClock { return testclock.NewFakeClock(t0) }

// startManager runs m in a goroutine and waits until it is idle. The function it returns
// cancels Run's context, checks that Run has returned context.Canceled, with every
// goroutine it started gone once the bubble is idle; calls after the first do nothing.
func startManager(t *testing.T, m manager) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	synctest.Wait()
	stopped := false
	return func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run: got %v, want context.Canceled", err)
			}
		default:
			t.Fatalf("Run did not return after its context was cancelled")
		}
	}
}

// onDelete makes the Deleter call f after recording a call.
func (h *harness) onDelete(f func(ctx context.Context, ref eviction.PodRef) error) {
	h.mu.Lock()
	h.deleteFn = f
	h.mu.Unlock()
}

// removeOnDelete makes the Deleter remove the pod from the cache and tell the Manager, as
// the API server and the informer would (at once).
func (h *harness) removeOnDelete() {
	h.onDelete(func(_ context.Context, ref eviction.PodRef) error {
		if cur, _ := h.cache.Pod(ref.Namespace, ref.Name); cur == nil || cur.UID != ref.UID {
			return eviction.ErrPodGone
		}
		h.removePod(ref.Name)
		return nil
	})
}

// setNode stores n in the cache, then tells the Manager (an add, or an update from the
// node the cache held), as an informer does. It does not wait.
func (h *harness) setNode(n *v1.Node) {
	old, _ := h.cache.Node(n.Name)
	h.cache.SetNode(n)
	h.m.NodeUpdated(old, n)
}

// removeNode deletes the node from the cache, then tells the Manager.
func (h *harness) removeNode(name string) {
	if old := h.cache.DeleteNode(name); old != nil {
		h.m.NodeUpdated(old, nil)
	}
}

// setPod stores p in the cache, then tells the Manager.
func (h *harness) setPod(p *v1.Pod) {
	old, _ := h.cache.Pod(p.Namespace, p.Name)
	h.cache.SetPod(p)
	h.m.PodUpdated(old, p)
}

// removePod deletes the pod from the cache, then tells the Manager.
func (h *harness) removePod(name string) {
	if old := h.cache.DeletePod(ns, name); old != nil {
		h.m.PodUpdated(old, nil)
	}
}

// wait waits until the Manager is idle.
func (h *harness) wait() { synctest.Wait() }

// step advances the fake clock by d and waits until the Manager is idle.
func (h *harness) step(d time.Duration) {
	h.clk.Step(d)
	synctest.Wait()
}

// stepTo advances the fake clock to t0+d and waits until the Manager is idle.
func (h *harness) stepTo(d time.Duration) {
	h.t.Helper()
	now := h.clk.Now()
	if t0.Add(d).Before(now) {
		h.t.Fatalf("stepTo(%v): the clock is already at %s", d, rel(now))
	}
	h.step(t0.Add(d).Sub(now))
}

// deleted returns the Deleter calls so far, as "name@+offset", sorted (calls of different
// pods at the same time may come in any order).
func (h *harness) deleted() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, len(h.deletions))
	for i, d := range h.deletions {
		out[i] = d.String()
	}
	slices.Sort(out)
	return out
}

// calls returns the Deleter calls so far, in call order.
func (h *harness) calls() []deletion {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.deletions)
}

// expectDeleted fails the test unless the Deleter calls so far are exactly want (as
// "name@+offset", in any order).
func (h *harness) expectDeleted(want ...string) {
	h.t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	if got := h.deleted(); !slices.Equal(got, want) {
		h.t.Errorf("at %s: got deletions %q, want %q", rel(h.clk.Now()), got, want)
	}
}

// pendingUTC returns m.Pending() with every time in UTC, to compare with times from t0.
func pendingUTC(m manager) []eviction.Pending {
	p := m.Pending()
	for i := range p {
		p[i].At = p[i].At.UTC()
	}
	return p
}

// pending returns the Manager's schedule as "name@+offset", earliest first.
func (h *harness) pending() []string {
	var out []string
	for _, p := range h.m.Pending() {
		out = append(out, p.Target.Name+"@"+rel(p.At))
	}
	return out
}

// expectPending fails the test unless the schedule is exactly want, in order.
func (h *harness) expectPending(want ...string) {
	h.t.Helper()
	if got := h.pending(); !slices.Equal(got, want) {
		h.t.Errorf("at %s: got pending %q, want %q", rel(h.clk.Now()), got, want)
	}
}

// eventsOf returns the Observer's events about the pod name, as strings such as
// "Cancelled default/web: Tolerated", in order.
func (h *harness) eventsOf(name string) []string {
	var out []string
	for _, e := range h.obs.Events() {
		if e.Pod.Name == name {
			out = append(out, eventString(e))
		}
	}
	return out
}

// eventString is Event.String with Scheduled times relative to t0.
func eventString(e evictiontest.Event) string {
	if e.Kind == evictiontest.Scheduled {
		return fmt.Sprintf("Scheduled %s at %s", e.Pod, rel(e.At))
	}
	return e.String()
}

// expectEvents fails the test unless the events about pod name are exactly want.
func (h *harness) expectEvents(name string, want ...string) {
	h.t.Helper()
	if got := h.eventsOf(name); !slices.Equal(got, want) {
		h.t.Errorf("events of %s: got\n\t%q\nwant\n\t%q", name, got, want)
	}
}
