package eviction_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestBrakePausesAndResumes is the case: 60 of 100 nodes tainted with F=0.55
// pause the evictions; untainting 10 resumes them, and no pod is evicted twice. The pods
// tolerate the taint for 300 s, so they fall due while paused: they stay pending, with the
// time they fell due, and are reported once. Once released they go under the rate limit,
// earliest due first, none dropped.
func TestBrakePausesAndResumes(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{
			Brake:     eviction.Brake{Fraction: 0.55},
			RateLimit: eviction.Limit{PerSecond: 10, Burst: 1},
		})
		h.removeOnDelete()
		h.cluster("a", 100, 300)
		h.taint("a", 0, 60, unreachable)
		h.stepTo(300 * time.Second)
		h.step(time.Minute)
		h.expectDeleted()
		p := h.m.Pending()
		if len(p) != 60 {
			t.Fatalf("paused: got %d pending, want 60", len(p))
		}
		for _, e := range p {
			if !e.At.Equal(t0.Add(300*time.Second)) || e.Delayed != eviction.ReasonPaused {
				t.Fatalf("paused: got pending %+v, want due at +5m0s, Paused", e)
			}
		}
		if got := countOf(h.obs, evictiontest.Delayed, eviction.ReasonPaused); got != 60 {
			t.Errorf("Delayed Paused reported %d times, want 60 (once per pod)", got)
		}

		h.taint("a", 50, 60) // 50 of 100 tainted: below 0.55, the brake releases
		for range 60 {
			h.step(100 * time.Millisecond)
		}
		calls := h.calls()
		if got, want := len(calls), 50; got != want {
			t.Fatalf("after the release: got %d deletions, want %d", got, want)
		}
		for k, d := range calls {
			var i int
			if _, err := fmt.Sscanf(d.Ref.Name, "pod-a-%d", &i); err != nil || i >= 50 {
				t.Errorf("deleted %s, a pod of an untainted node", d.Ref.Name)
			}
			if k > 0 && d.At.Sub(calls[k-1].At) < 100*time.Millisecond {
				t.Errorf("deletions %d and %d %v apart, want at least 100ms (10/s)", k, k+1, d.At.Sub(calls[k-1].At))
			}
		}
		h.expectUnique()
		if got := h.m.Pending(); len(got) != 0 {
			t.Errorf("pending after the release: %v, want none", got)
		}
	})
}

// TestBrakeZone: a zone rule pauses the zone that is mostly tainted and not the other. The
// pods tolerate the taint for a minute, as most do (300 s by default): the brake counts each
// node as its taint arrives, and can only hold back what falls due after it has tripped.
func TestBrakeZone(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{Brake: eviction.Brake{ZoneFraction: 0.5}})
		h.removeOnDelete()
		h.cluster("a", 10, 60)
		h.cluster("b", 10, 60)
		h.taint("a", 0, 6, unreachable) // 6 of 10 in zone a: paused
		h.taint("b", 0, 2, unreachable) // 2 of 10 in zone b: evicted
		h.stepTo(60 * time.Second)
		h.expectDeleted("pod-b-0@+1m0s", "pod-b-1@+1m0s")
		var paused []string
		for _, p := range h.m.Pending() {
			if p.Delayed == eviction.ReasonPaused {
				paused = append(paused, p.Target.Name)
			}
		}
		slices.Sort(paused)
		if want := []string{"pod-a-0", "pod-a-1", "pod-a-2", "pod-a-3", "pod-a-4", "pod-a-5"}; !slices.Equal(paused, want) {
			t.Errorf("paused %v, want the 6 pods of zone a", paused)
		}
	})
}

// TestCancelledWhileWaitingNeverRuns: a pod deleted while it waits for a token, and one
// whose node recovers while paused, are never deleted; the token goes to the next pod that
// asks for one.
func TestCancelledWhileWaitingNeverRuns(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{RateLimit: eviction.Limit{PerSecond: 1, Burst: 1}})
		h.removeOnDelete()
		h.cluster("a", 3, -1)
		h.taint("a", 0, 3, unreachable) // one pod at once, the others hold +1s and +2s
		h.stepTo(1500 * time.Millisecond)
		if got := len(h.calls()); got != 2 {
			t.Fatalf("at +1.5s: %d deletions, want 2", got)
		}
		p := h.m.Pending()
		if len(p) != 1 || p[0].Delayed != eviction.ReasonRateLimited {
			t.Fatalf("at +1.5s: pending %v, want one pod waiting for the +2s token", p)
		}
		victim := p[0].Target.Name
		h.removePod(victim) // cancelled while it holds the +2s token
		h.wait()
		h.setPod(newPod("late", "a-0")) // due at once: takes the token given back
		h.wait()
		for range 30 {
			h.step(100 * time.Millisecond)
		}
		calls := h.calls()
		if got := calls[len(calls)-1].String(); len(calls) != 3 || got != "late@+2s" {
			t.Errorf("deletions %v, want 3, the last late@+2s", calls)
		}
		h.expectEvents(victim,
			"Scheduled default/"+victim+" at +0s",
			"Delayed default/"+victim+": RateLimited",
			"Cancelled default/"+victim+": TargetDeleted")
	})
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{Brake: eviction.Brake{Fraction: 0.5}})
		h.cluster("a", 3, 10)
		h.taint("a", 0, 2, unreachable) // 2 of 3: paused once due
		h.stepTo(10 * time.Second)
		h.taint("a", 0, 1)           // a-0 recovers: its pod's eviction is cancelled; 1 of 3 resumes
		h.taint("a", 2, 3, notReady) // due at +20s
		h.stepTo(21 * time.Second)
		h.expectDeleted("pod-a-1@+10s", "pod-a-2@+10s") // a-2's pod does not tolerate not-ready
		// The release (in NodeUpdated) and the node's processing race: whether the recheck
		// before the delete finds the node untainted first or the update cancels first, a
		// held eviction ends Cancelled.
		h.expectEvents("pod-a-0",
			"Scheduled default/pod-a-0 at +10s",
			"Delayed default/pod-a-0: Paused",
			"Cancelled default/pod-a-0: NotTainted")
	})
}

// TestBudgetsRestart: a new Manager over the same cluster keeps the same rate (from a full
// bucket: one burst may follow a restart) and the same brake.
func TestBudgetsRestart(t *testing.T) {
	synctestRun(t, "rate", func(t *testing.T) {
		opts := eviction.Options{RateLimit: eviction.Limit{PerSecond: 10, Burst: 10}}
		h := run(t, opts)
		h.removeOnDelete()
		h.cluster("a", 100, -1)
		h.taint("a", 0, 100, unreachable)
		for range 10 {
			h.step(100 * time.Millisecond)
		}
		if got := len(h.calls()); got != 20 {
			t.Fatalf("first Manager, after 1 s: %d deletions, want 20 (burst 10, 10/s)", got)
		}
		h.stop()
		s := newSecondManager(t, h, opts)
		defer s.stop()
		if got := len(h.calls()); got != 30 {
			t.Fatalf("second Manager, at its start: %d deletions in all, want 30 (another burst of 10)", got)
		}
		for range 30 {
			h.step(100 * time.Millisecond)
		}
		calls := h.calls()
		if got := len(calls); got != 60 {
			t.Errorf("second Manager, after 3 s: %d deletions in all, want 60", got)
		}
		for i := 31; i < len(calls); i++ {
			if gap := calls[i].At.Sub(calls[i-1].At); gap < 100*time.Millisecond {
				t.Errorf("deletions %d and %d %v apart, want 100ms", i, i+1, gap)
			}
		}
		h.expectUnique()
	})
	synctestRun(t, "brake", func(t *testing.T) {
		opts := eviction.Options{Brake: eviction.Brake{Fraction: 0.5}}
		h := run(t, opts)
		h.removeOnDelete()
		h.cluster("a", 10, 30)
		h.taint("a", 0, 6, unreachable)
		h.stepTo(31 * time.Second)
		h.stop()
		s := newSecondManager(t, h, opts)
		defer s.stop()
		h.step(time.Minute)
		h.expectDeleted()
		if got := countOf(s.obs, evictiontest.Delayed, eviction.ReasonPaused); got != 6 {
			t.Errorf("second Manager: %d pods reported Paused, want 6", got)
		}
		h.taint("a", 4, 6) // 4 of 10: released
		h.step(time.Second)
		if got := len(h.calls()); got != 4 {
			t.Errorf("after the release: %d deletions, want 4", got)
		}
	})
}

// second is a Manager started over a harness's cluster (nodes a-0..a-99 and their pods),
// clock and Deleter, fed the cluster as an informer's initial list. It replaces the
// harness's Manager.
type second struct {
	m    manager
	obs  *evictiontest.Observer
	stop func()
}

func newSecondManager(t *testing.T, h *harness, opts eviction.Options) *second {
	t.Helper()
	s := &second{obs: &evictiontest.Observer{}}
	opts.Clock, opts.Observer = h.clk, s.obs
	m, err := newManager(h.t, h.del, h.cache, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.m = m
	for _, zone := range []string{"a"} {
		for i := range 100 {
			if n, _ := h.cache.Node(fmt.Sprintf("%s-%d", zone, i)); n != nil {
				m.NodeUpdated(nil, n)
			}
			if p, _ := h.cache.Pod(ns, fmt.Sprintf("pod-%s-%d", zone, i)); p != nil {
				m.PodUpdated(nil, p)
			}
		}
	}
	m.Synced() // every node and pod fed, as a new leader's informers have
	s.stop = startManager(t, m)
	h.m = m
	return s
}

func TestNewRejectsBadBudgets(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts eviction.Options
		want string
	}{
		{"negative rate", eviction.Options{RateLimit: eviction.Limit{PerSecond: -1, Burst: 1}}, "eviction: engine: RateLimit.PerSecond"},
		{"burst 0 with a rate", eviction.Options{RateLimit: eviction.Limit{PerSecond: 5}}, "eviction: engine: RateLimit.Burst"},
		{"taint rate without burst", eviction.Options{TaintRateLimits: map[string]eviction.Limit{unreachable: {PerSecond: 1}}}, `eviction: engine: TaintRateLimits["node.kubernetes.io/unreachable"].Burst`},
		{"fraction above 1", eviction.Options{Brake: eviction.Brake{Fraction: 1.2}}, "eviction: engine: Brake.Fraction"},
		{"zone fraction 0 < F fails the other way", eviction.Options{Brake: eviction.Brake{ZoneFraction: -0.5}}, "eviction: engine: Brake.ZoneFraction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := eviction.New(&evictiontest.Deleter{}, &evictiontest.Cache{}, tc.opts)
			if m != nil || err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("New: got %v, %v; want nil and an error starting %q", m, err, tc.want)
			}
		})
	}
}

// TestBrakeReleasesInDeadlineOrder: evictions that fell due at different times while paused
// go, once released, earliest due first, under the rate limit.
func TestBrakeReleasesInDeadlineOrder(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{
			Brake:      eviction.Brake{Fraction: 0.5},
			RateLimit:  eviction.Limit{PerSecond: 1, Burst: 1},
			ActWorkers: 1,
		})
		h.removeOnDelete()
		for i := range 3 {
			h.setNode(newNode(fmt.Sprintf("a-%d", i)))
		}
		for i := range 5 { // pod-4 due first (+10s), pod-0 last (+14s)
			h.setPod(newPod(fmt.Sprintf("pod-%d", i), "a-0", withTolerations(tolFor(unreachable, int64(14-i)))))
		}
		h.wait()
		h.taint("a", 0, 2, unreachable) // 2 of 3: paused
		for range 20 {
			h.step(time.Second) // each falls due, and is held, at its time
		}
		var due []string
		for _, p := range h.m.Pending() {
			due = append(due, p.Target.Name+"@"+rel(p.At))
		}
		if want := []string{"pod-4@+10s", "pod-3@+11s", "pod-2@+12s", "pod-1@+13s", "pod-0@+14s"}; !slices.Equal(due, want) {
			t.Errorf("paused: pending %v, want %v (the times they fell due)", due, want)
		}
		h.taint("a", 1, 2) // 1 of 3: released
		for range 10 {
			h.step(500 * time.Millisecond)
		}
		var order []string
		for _, d := range h.calls() {
			order = append(order, d.String())
		}
		if want := []string{"pod-4@+20s", "pod-3@+21s", "pod-2@+22s", "pod-1@+23s", "pod-0@+24s"}; !slices.Equal(order, want) {
			t.Errorf("after the release: deletions %v, want %v", order, want)
		}
	})
}
