package eviction_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

const (
	unreachable = "node.kubernetes.io/unreachable"
	notReady    = "node.kubernetes.io/not-ready"
)

// cluster adds nodes zone-0..zone-(n-1), labelled with zone when it is not empty, each
// with one pod (pod-zone-i) that tolerates unreachable for tol seconds (not at all when tol
// is negative).
func (h *harness) cluster(zone string, n int, tol int64) {
	for i := range n {
		node := newNode(fmt.Sprintf("%s-%d", zone, i))
		if zone != "" {
			node.Labels = map[string]string{"topology.kubernetes.io/zone": zone}
		}
		h.setNode(node)
		var opts []podOption
		if tol >= 0 {
			opts = append(opts, withTolerations(tolFor(unreachable, tol)))
		}
		h.setPod(newPod("pod-"+node.Name, node.Name, opts...))
	}
	h.wait()
}

// taint sets the NoExecute taints of keys on nodes zone-from..zone-(to-1), added at the
// current time; no keys untaints them. Every node is stored in the cache before the Manager
// hears of any, so that its rechecks see all of the change at once.
func (h *harness) taint(zone string, from, to int, keys ...string) {
	type change struct{ old, new *v1.Node }
	var changes []change
	for i := from; i < to; i++ {
		old, _ := h.cache.Node(fmt.Sprintf("%s-%d", zone, i))
		n := old.DeepCopy()
		n.Spec.Taints = nil
		for _, k := range keys {
			n.Spec.Taints = append(n.Spec.Taints, noExecute(k, h.clk.Now()))
		}
		h.cache.SetNode(n)
		changes = append(changes, change{old, n})
	}
	for _, c := range changes {
		h.m.NodeUpdated(c.old, c.new)
	}
	h.wait()
}

// countOf returns how many events of kind the observer has, with reason when not empty.
func countOf(obs *evictiontest.Observer, kind evictiontest.Kind, reason eviction.Reason) int {
	n := 0
	for _, e := range obs.Of(kind) {
		if reason == "" || e.Reason == reason {
			n++
		}
	}
	return n
}

// expectUnique fails the test if a pod was deleted twice.
func (h *harness) expectUnique() {
	h.t.Helper()
	seen := map[string]bool{}
	for _, d := range h.calls() {
		if seen[d.Ref.Name] {
			h.t.Errorf("%s deleted twice", d.Ref.Name)
		}
		seen[d.Ref.Name] = true
	}
}

// TestRateLimitThousand is the figure: 1,000 pods due at once with 10 a second and
// a burst of 10 leave 10 at once, then one every 100 ms: the 1,000th at 99 s.
func TestRateLimitThousand(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{RateLimit: eviction.Limit{PerSecond: 10, Burst: 10}})
		h.removeOnDelete()
		h.cluster("a", 1000, -1)
		h.taint("a", 0, 1000, unreachable)
		if got, want := len(h.calls()), 10; got != want {
			t.Fatalf("at once: got %d deletions, want the burst of %d", got, want)
		}
		p := h.m.Pending()
		if len(p) != 990 || !p[0].At.Equal(t0) || p[0].Delayed != eviction.ReasonRateLimited {
			t.Fatalf("Pending: got %d entries, first %+v; want 990, due at +0s, RateLimited", len(p), p[0])
		}
		for range 990 {
			h.step(100 * time.Millisecond)
		}
		calls := h.calls()
		if got, want := len(calls), 1000; got != want {
			t.Fatalf("after 99 s: got %d deletions, want %d", got, want)
		}
		if got, want := calls[999].At.Sub(t0), 99*time.Second; got != want {
			t.Errorf("the 1,000th left at +%v, want +%v", got, want)
		}
		for i := 10; i < 1000; i++ {
			if got, want := calls[i].At.Sub(t0), time.Duration(i-9)*100*time.Millisecond; got != want {
				t.Fatalf("deletion %d at +%v, want +%v", i+1, got, want)
			}
		}
		if got, want := countOf(h.obs, evictiontest.Delayed, eviction.ReasonRateLimited), 990; got != want {
			t.Errorf("Delayed RateLimited reported %d times, want once per throttled pod, %d", got, want)
		}
		h.expectUnique()
	})
}

// TestRateLimitDeadlineOrder: pods due at different times while the limit holds them back
// leave earliest due first.
func TestRateLimitDeadlineOrder(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{RateLimit: eviction.Limit{PerSecond: 1, Burst: 1}, ActWorkers: 1})
		h.removeOnDelete()
		h.setNode(newNode("n", noExecute(unreachable, t0)))
		for i := range 5 { // pod-4 due first, pod-0 last
			h.setPod(newPod(fmt.Sprintf("pod-%d", i), "n", withTolerations(tolFor(unreachable, int64(10-i)))))
		}
		h.wait()
		for range 20 {
			h.step(500 * time.Millisecond)
		}
		h.expectDeleted("pod-4@+6s", "pod-3@+7s", "pod-2@+8s", "pod-1@+9s", "pod-0@+10s")
		var order []string
		for _, d := range h.calls() {
			order = append(order, d.Ref.Name)
		}
		if want := []string{"pod-4", "pod-3", "pod-2", "pod-1", "pod-0"}; !slices.Equal(order, want) {
			t.Errorf("order %v, want %v", order, want)
		}
	})
}

func TestTaintRateLimits(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{TaintRateLimits: map[string]eviction.Limit{
			unreachable: {PerSecond: 1, Burst: 1},
			notReady:    {PerSecond: 5, Burst: 1},
		}})
		h.removeOnDelete()
		h.cluster("u", 4, -1)
		h.cluster("r", 4, -1)
		h.cluster("both", 3, -1)
		h.taint("u", 0, 4, unreachable)
		h.taint("r", 0, 4, notReady)
		h.taint("both", 0, 3, unreachable, notReady)
		for range 40 {
			h.step(200 * time.Millisecond)
		}
		var u, r, both []time.Duration
		for _, d := range h.calls() {
			at := d.At.Sub(t0)
			switch {
			case strings.HasPrefix(d.Ref.Name, "pod-u-"):
				u = append(u, at)
			case strings.HasPrefix(d.Ref.Name, "pod-r-"):
				r = append(r, at)
			default:
				both = append(both, at)
			}
		}
		// unreachable: one a second, shared by u and both; not-ready five a second, shared by
		// r and both, where both also waits for unreachable's token.
		all := append(append([]time.Duration{}, u...), both...)
		slices.Sort(all)
		if want := seconds(0, 1, 2, 3, 4, 5, 6); !slices.Equal(all, want) {
			t.Errorf("unreachable evictions at %v, want one a second: %v", all, want)
		}
		for i := 1; i < len(r); i++ {
			if gap := r[i] - r[i-1]; gap < 200*time.Millisecond {
				t.Errorf("not-ready evictions %v: %v apart, want at least 200ms", r, gap)
			}
		}
		if r[len(r)-1] > time.Second {
			t.Errorf("not-ready-only evictions at %v: held back by the slower unreachable limit", r)
		}
		if len(u) != 4 || len(r) != 4 || len(both) != 3 {
			t.Errorf("got %d, %d, %d deletions, want 4, 4, 3", len(u), len(r), len(both))
		}
		h.expectUnique()
	})
}

func seconds(s ...int) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, v := range s {
		out[i] = time.Duration(v) * time.Second
	}
	return out
}

// TestRateLimitDryRunAndFromObservation: a dry run is limited as a real one is (it reports
// what would go, when it would go), and with FromObservation a taint whose toleration ran
// out is the one whose per-taint limit applies.
func TestRateLimitDryRunAndFromObservation(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{
			DryRun:          true,
			DeadlineSource:  eviction.FromObservation,
			TaintRateLimits: map[string]eviction.Limit{unreachable: {PerSecond: 1, Burst: 1}},
		})
		h.cluster("a", 3, 5) // tolerate unreachable for 5 s
		h.taint("a", 0, 3, unreachable)
		for i, at := range []time.Duration{5 * time.Second, 6 * time.Second, 7 * time.Second} {
			h.stepTo(at)
			if got := countOf(h.obs, evictiontest.Succeeded, ""); got != i+1 {
				t.Errorf("at +%v: %d would-be evictions, want %d (one a second)", at, got, i+1)
			}
		}
		for _, e := range h.obs.Of(evictiontest.Succeeded) {
			if !e.DryRun {
				t.Errorf("%v: not a dry run", e)
			}
		}
		if got := countOf(h.obs, evictiontest.Delayed, eviction.ReasonRateLimited); got != 2 {
			t.Errorf("Delayed RateLimited %d times, want 2 (one a second after the first)", got)
		}
	})
}
