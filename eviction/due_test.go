package eviction_test

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestObserverDue checks the deadline Started and Succeeded give: the time the eviction was
// last reported Scheduled for, whatever moved it, and kept through a wait for a rate limit,
// a retry, and updates that change nothing.
func TestObserverDue(t *testing.T) {
	tols := withTolerations(tolFor("a", 300))
	for _, tc := range []struct {
		name    string
		opts    eviction.Options
		pods    []string
		act     func(h *harness)
		wantDue map[string]time.Duration // by pod, after t0
		check   func(t *testing.T, h *harness)
	}{{
		name:    "at its deadline",
		pods:    []string{"web"},
		act:     func(h *harness) { h.stepTo(10 * time.Minute) },
		wantDue: map[string]time.Duration{"web": 5 * time.Minute},
	}, {
		name: "an update that changes nothing keeps it",
		pods: []string{"web"},
		act: func(h *harness) {
			h.step(time.Minute)
			h.setPod(newPod("web", "n1", tols, func(p *v1.Pod) { p.Labels = map[string]string{"x": "y"} }))
			h.setNode(newNode("n1", noExecute("a", t0), noSchedule("b")))
			h.wait()
			h.stepTo(5 * time.Minute)
		},
		wantDue: map[string]time.Duration{"web": 5 * time.Minute},
	}, {
		name: "an update moves it",
		pods: []string{"web"},
		act: func(h *harness) {
			h.step(time.Minute)
			h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 120))))
			h.wait()
			h.stepTo(2 * time.Minute)
		},
		wantDue: map[string]time.Duration{"web": 2 * time.Minute},
	}, {
		name: "the recheck moves it",
		pods: []string{"web"},
		act: func(h *harness) {
			h.step(time.Minute)
			h.cache.SetPod(newPod("web", "n1", withTolerations(tolFor("a", 420)))) // not told
			h.stepTo(5 * time.Minute)
			h.stepTo(7 * time.Minute)
		},
		wantDue: map[string]time.Duration{"web": 7 * time.Minute},
	}, {
		name: "a wait for a rate limit does not move it",
		opts: eviction.Options{RateLimit: eviction.Limit{PerSecond: 1, Burst: 1}},
		pods: []string{"web", "db"},
		act: func(h *harness) {
			h.stepTo(5 * time.Minute)
			h.step(time.Second)
		},
		wantDue: map[string]time.Duration{"web": 5 * time.Minute, "db": 5 * time.Minute},
		check: func(t *testing.T, h *harness) {
			if got := countOf(h.obs, evictiontest.Delayed, eviction.ReasonRateLimited); got != 1 {
				t.Errorf("got %d evictions delayed, want 1", got)
			}
			var at []string // which of the two goes first is not defined
			for _, d := range h.calls() {
				at = append(at, rel(d.At))
			}
			if want := []string{"+5m0s", "+5m1s"}; !slices.Equal(at, want) {
				t.Errorf("deletions at %v, want %v", at, want)
			}
		},
	}, {
		name: "a retry keeps it",
		opts: eviction.Options{Backoff: exactBackoff},
		pods: []string{"web"},
		act: func(h *harness) {
			h.onDelete(failTimes(2))
			h.stepTo(5 * time.Minute)
			for range 4 {
				h.step(time.Second)
			}
		},
		wantDue: map[string]time.Duration{"web": 5 * time.Minute},
		check: func(t *testing.T, h *harness) {
			if got := len(h.obs.Of(evictiontest.Started)); got != 3 {
				t.Errorf("got %d attempts, want 3", got)
			}
		},
	}, {
		name:    "dry run",
		opts:    eviction.Options{DryRun: true},
		pods:    []string{"web"},
		act:     func(h *harness) { h.stepTo(10 * time.Minute) },
		wantDue: map[string]time.Duration{"web": 5 * time.Minute},
	}} {
		synctestRun(t, tc.name, func(t *testing.T) {
			h := run(t, tc.opts)
			h.setNode(newNode("n1", noExecute("a", t0)))
			for _, name := range tc.pods {
				h.setPod(newPod(name, "n1", tols))
			}
			h.wait()
			tc.act(h)
			for _, kind := range []evictiontest.Kind{evictiontest.Started, evictiontest.Succeeded} {
				seen := map[string]bool{}
				for _, e := range h.obs.Of(kind) {
					seen[e.Pod.Name] = true
					if got, want := e.At, t0.Add(tc.wantDue[e.Pod.Name]); !got.Equal(want) {
						t.Errorf("%s %s (attempt %d): got due %s, want %s", kind, e.Pod.Name, e.Attempt, rel(got), rel(want))
					}
				}
				if kind == evictiontest.Started && tc.opts.DryRun {
					continue // no Deleter call, no Started
				}
				if got, want := len(seen), len(tc.wantDue); got != want {
					t.Errorf("%s reported for %d pods, want %d", kind, got, want)
				}
			}
			if tc.check != nil {
				tc.check(t, h)
			}
		})
	}
}
