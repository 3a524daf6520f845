package eviction_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestClockSkew: a taint whose TimeAdded lies in the future (the clock of the controller
// that added it runs ahead) counts from the time the Manager first saw it, and stays pinned
// there; it never holds an eviction back until TimeAdded.
func TestClockSkew(t *testing.T) {
	yearAhead := t0.AddDate(1, 0, 0)
	for _, source := range []eviction.DeadlineSource{eviction.FromTimeAdded, eviction.FromObservation} {
		name := map[eviction.DeadlineSource]string{eviction.FromTimeAdded: "FromTimeAdded", eviction.FromObservation: "FromObservation"}[source]
		synctestRun(t, name+": TimeAdded a year ahead, 60 s toleration: evicted 60 s after first sight", func(t *testing.T) {
			h := run(t, eviction.Options{DeadlineSource: source})
			h.setNode(newNode("n1", noExecute("a", yearAhead)))
			h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 60))))
			h.wait()
			h.expectPending("web@+1m0s")
			h.stepTo(time.Minute - time.Nanosecond)
			h.expectDeleted()
			h.step(time.Nanosecond)
			h.expectDeleted("web@+1m0s")
			h.expectEvents("web", "Scheduled default/web at +1m0s", "Started default/web (attempt 1)", "Succeeded default/web (attempt 1)")
		})
	}

	synctestRun(t, "a pod created 30 s after first sight: evicted at first sight + 60 s", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noExecute("a", yearAhead)))
		h.wait()
		h.step(30 * time.Second)
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 60))))
		h.wait()
		h.expectPending("web@+1m0s")
		h.stepTo(time.Minute)
		h.expectDeleted("web@+1m0s")
	})

	synctestRun(t, "the same taint sent again keeps its first sight; a new TimeAdded is a new taint", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noExecute("a", yearAhead)))
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 60))))
		h.wait()
		h.step(20 * time.Second)
		h.m.NodeUpdated(nil, newNode("n1", noExecute("a", yearAhead))) // a resync, say
		h.wait()
		h.expectPending("web@+1m0s")
		// Re-added (a new TimeAdded, still ahead): first seen now, at +20s.
		h.setNode(newNode("n1", noExecute("a", yearAhead.Add(time.Hour))))
		h.wait()
		h.expectPending("web@+1m20s")
		// Re-added with a TimeAdded in the past: it counts from that.
		h.setNode(newNode("n1", noExecute("a", t0.Add(5*time.Second))))
		h.wait()
		h.expectPending("web@+1m5s")
	})
}

// TestTimesInClockLocation: the times Pending and the Observer report are in the location of
// the clock's time, whatever the location of the taint's TimeAdded.
func TestTimesInClockLocation(t *testing.T) {
	synctestRun(t, "UTC clock, TimeAdded in another zone", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noExecute("a", t0.In(time.FixedZone("UTC+5", 5*3600)))))
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 60))))
		h.wait()
		p := h.m.Pending()
		if len(p) != 1 || p[0].At.Location() != time.UTC || !p[0].At.Equal(t0.Add(time.Minute)) {
			t.Errorf("got Pending %v, want web at %v in UTC", p, t0.Add(time.Minute))
		}
		s := h.obs.Of(evictiontest.Scheduled)
		if len(s) != 1 || s[0].At.Location() != time.UTC {
			t.Errorf("got Scheduled %v, want one in UTC", s)
		}
	})
}

// TestDeadlineNeverLater is a property test: while a node's taints and its pods'
// tolerations stay the same, no pod's deadline moves later, whatever the taints' TimeAdded
// (past, future, absent), the tolerations, and the interleaving of clock steps, rechecks
// (a Deleter that always fails, so that every retry rechecks) and unrelated updates. Each
// seed is reproducible: go test -run 'TestDeadlineNeverLater/seed_N$'.
func TestDeadlineNeverLater(t *testing.T) {
	for seed := range 150 {
		synctestRun(t, fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 11))
			h := run(t, eviction.Options{Backoff: exactBackoff})
			h.onDelete(func(context.Context, eviction.PodRef) error { return errAPI })
			node := newNode("n1", randomTaints(rng)...)
			h.setNode(node)
			pods := make([]*v1.Pod, 3)
			for i := range pods {
				pods[i] = newPod(fmt.Sprintf("p%d", i), "n1", withTolerations(randomTolerations(rng)...))
				h.setPod(pods[i])
			}
			h.wait()
			var trace []string
			for range 40 {
				trace = append(trace, unrelatedChange(rng, h, node, pods))
				h.wait()
				if err := noLaterDeadline(h.obs.Events()); err != nil {
					t.Fatalf("%v\ntaints %v\nsteps %q", err, node.Spec.Taints, trace)
				}
			}
		})
	}
}

func randomTaints(rng *rand.Rand) []v1.Taint {
	var out []v1.Taint
	for i := range 1 + rng.IntN(3) {
		var added time.Time
		switch rng.IntN(3) {
		case 0:
			added = t0.Add(-time.Duration(rng.IntN(600)) * time.Second)
		case 1:
			added = t0.Add(time.Duration(1+rng.IntN(400*24*3600)) * time.Second)
		}
		out = append(out, noExecute(string(rune('a'+i)), added))
	}
	return out
}

func randomTolerations(rng *rand.Rand) []v1.Toleration {
	var out []v1.Toleration
	for range rng.IntN(4) {
		key := string(rune('a' + rng.IntN(3)))
		if rng.IntN(4) == 0 {
			out = append(out, tolForever(key))
		} else {
			out = append(out, tolFor(key, int64(rng.IntN(700))-50))
		}
	}
	return out
}

// unrelatedChange steps the clock, or sends an update that changes none of the taints or
// tolerations, and says which.
func unrelatedChange(rng *rand.Rand, h *harness, node *v1.Node, pods []*v1.Pod) string {
	switch rng.IntN(5) {
	case 0:
		h.m.NodeUpdated(nil, node) // as an informer's resync, or a restart of the watch
		return "node resent"
	case 1:
		changed := node.DeepCopy()
		changed.Spec.Taints = append(changed.Spec.Taints, noSchedule(fmt.Sprint("x", rng.IntN(100))))
		changed.Labels = map[string]string{"rev": fmt.Sprint(rng.IntN(100))}
		h.setNode(changed)
		return "node labels and NoSchedule taints changed"
	case 2:
		p := pods[rng.IntN(len(pods))].DeepCopy()
		if _, err := h.cache.Pod(p.Namespace, p.Name); err != nil {
			return "nothing"
		}
		p.Labels = map[string]string{"rev": fmt.Sprint(rng.IntN(100))}
		h.m.PodUpdated(nil, p)
		return "pod " + p.Name + " resent"
	}
	var d time.Duration
	if rng.IntN(8) == 0 {
		d = time.Duration(rng.IntN(500*24)) * time.Hour
	} else {
		d = time.Duration(rng.IntN(90_000)) * time.Millisecond
	}
	h.clk.Step(d)
	return "step " + d.String()
}

// noLaterDeadline checks that each pod's Scheduled times never grow.
func noLaterDeadline(events []evictiontest.Event) error {
	last := map[string]time.Time{}
	for _, e := range events {
		if e.Kind != evictiontest.Scheduled {
			continue
		}
		if prev, ok := last[e.Pod.Name]; ok && e.At.After(prev) {
			return fmt.Errorf("%s: deadline moved later, from %s to %s", e.Pod.Name, rel(prev), rel(e.At))
		}
		last[e.Pod.Name] = e.At
	}
	return nil
}
