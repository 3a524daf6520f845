package eviction_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestRecheckBeforeDeleting changes the cache behind the Manager's back (the informer's store
// has the change, its handler has not run yet) while an eviction is pending: right before
// deleting, the Manager must see the change, and decide from it as the update will: the
// same decision and the same report, whichever comes first. Kube deletes by name from its
// stale schedule (issues 119862, 125332).
func TestRecheckBeforeDeleting(t *testing.T) {
	tols := withTolerations(tolFor("a", 300))
	for _, tc := range []struct {
		name        string
		change      func(h *harness)
		wantClosed  string   // the closing report of web-1's eviction, "" for none
		thenEvents  []string // the reports of web after that closing one
		wantDeleted []string
		wantPending []string // after the deadline
	}{
		{
			name:        "unchanged: deleted",
			change:      func(h *harness) {},
			wantDeleted: []string{"web@+5m0s"},
		},
		{
			// The replacement, which tolerates nothing, is decided as its update will
			// decide it: evicted at once, by its own UID.
			name: "pod re-created under the same name",
			change: func(h *harness) {
				h.cache.SetPod(newPod("web", "n1", withUID("web-2")))
			},
			wantClosed:  "Cancelled default/web: Replaced",
			thenEvents:  []string{"Scheduled default/web at +5m0s", "Started default/web (attempt 1)", "Succeeded default/web (attempt 1)"},
			wantDeleted: []string{"web@+5m0s"},
		},
		{
			name: "pod re-created under the same name on another node",
			change: func(h *harness) {
				h.cache.SetPod(newPod("web", "n2", withUID("web-2")))
			},
			wantClosed:  "Cancelled default/web: Replaced",
			thenEvents:  []string{"Scheduled default/web at +5m0s", "Started default/web (attempt 1)", "Succeeded default/web (attempt 1)"},
			wantDeleted: []string{"web@+5m0s"},
		},
		{
			// A replacement that tolerates nothing on an untainted node: nothing to do.
			name: "pod re-created under the same name on an untainted node",
			change: func(h *harness) {
				h.cache.SetPod(newPod("web", "n3", withUID("web-2")))
			},
			wantClosed: "Cancelled default/web: Replaced",
		},
		{
			name:       "pod deleted",
			change:     func(h *harness) { h.cache.DeletePod(ns, "web") },
			wantClosed: "Cancelled default/web: TargetDeleted",
		},
		{
			// The same UID on a node that is not tainted: nothing is due any more.
			name: "pod bound to another node, not tainted",
			change: func(h *harness) {
				h.cache.SetPod(newPod("web", "n3", tols))
			},
			wantClosed: "Cancelled default/web: NotTainted",
		},
		{
			// The same UID on a node that is tainted as well, as long: due there now. The
			// eviction moves to that node and goes; the Deleter is told the node.
			name: "pod bound to another node, tainted too",
			change: func(h *harness) {
				h.cache.SetPod(newPod("web", "n2", tols))
			},
			wantDeleted: []string{"web@+5m0s"},
		},
		{
			name: "pod terminating",
			change: func(h *harness) {
				h.cache.SetPod(newPod("web", "n1", tols, terminating()))
			},
			wantClosed: "Skipped default/web: PodTerminating",
		},
		{
			name:       "taint removed",
			change:     func(h *harness) { h.cache.SetNode(newNode("n1", noSchedule("a"))) },
			wantClosed: "Cancelled default/web: NotTainted",
		},
		{
			name:       "node deleted",
			change:     func(h *harness) { h.cache.DeleteNode("n1") },
			wantClosed: "Cancelled default/web: HolderDeleted",
		},
		{
			name: "toleration made infinite",
			change: func(h *harness) {
				h.cache.SetPod(newPod("web", "n1", withTolerations(tolForever("a"))))
			},
			wantClosed: "Cancelled default/web: Tolerated",
		},
		{
			// Not closed: moved (Scheduled with the later time), and deleted then.
			name: "toleration lengthened: due later, moved",
			change: func(h *harness) {
				h.cache.SetPod(newPod("web", "n1", withTolerations(tolFor("a", 600))))
			},
			wantPending: []string{"web@+10m0s"},
		},
	} {
		synctestRun(t, tc.name, func(t *testing.T) {
			h := run(t, eviction.Options{})
			h.setNode(newNode("n1", noExecute("a", t0)))
			h.setNode(newNode("n2", noExecute("a", t0)))
			h.setNode(newNode("n3"))
			h.setPod(newPod("web", "n1", tols))
			h.wait()
			h.expectPending("web@+5m0s")
			h.step(time.Minute)
			tc.change(h)
			h.stepTo(5 * time.Minute)
			h.expectDeleted(tc.wantDeleted...)
			h.expectPending(tc.wantPending...)
			events := h.eventsOf("web")
			if tc.wantClosed == "" {
				for _, e := range events {
					if strings.HasPrefix(e, "Cancelled") || strings.HasPrefix(e, "Skipped") {
						t.Errorf("got closing report %q, want none; events %q", e, events)
					}
				}
				if c := h.calls(); len(c) == 1 {
					node := "n1"
					if tc.name == "pod bound to another node, tainted too" {
						node = "n2"
					}
					if want := (eviction.PodRef{Namespace: ns, Name: "web", UID: "web-1", Holder: node}); c[0].Ref != want {
						t.Errorf("Deleter got %+v, want %+v", c[0].Ref, want)
					}
				}
			} else if want := append([]string{"Scheduled default/web at +5m0s", tc.wantClosed}, tc.thenEvents...); !slices.Equal(events, want) {
				t.Fatalf("events of web: got %q, want %q", events, want)
			} else if c := h.calls(); len(c) > 0 && c[0].Ref.UID != "web-2" {
				t.Errorf("Deleter got %+v, want the replacement web-2", c[0].Ref)
			}
			// The schedule was stale; nothing is deleted later either, unless a later
			// deadline was found.
			if tc.wantPending == nil {
				h.stepTo(time.Hour)
				h.expectDeleted(tc.wantDeleted...)
			} else {
				h.expectEvents("web", "Scheduled default/web at +5m0s", "Scheduled default/web at +10m0s")
				h.stepTo(10*time.Minute - time.Nanosecond)
				h.expectDeleted()
				h.step(time.Nanosecond)
				h.expectDeleted("web@+10m0s")
			}
		})
	}

	synctestRun(t, "replacement's update after the recheck decided it", func(t *testing.T) {
		// The stale schedule of web-1 does not delete web-1's name: the recheck finds
		// web-2, which does not tolerate the taint, and decides it by web-2's own UID. The
		// update that comes later finds it done and acts no more.
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1", tols))
		h.wait()
		old, _ := h.cache.Pod(ns, "web")
		replacement := newPod("web", "n1", withUID("web-2"))
		h.cache.SetPod(replacement)
		h.stepTo(5 * time.Minute)
		h.expectDeleted("web@+5m0s")
		h.step(time.Minute)
		h.m.PodUpdated(old, replacement)
		h.wait()
		h.stepTo(time.Hour)
		h.expectDeleted("web@+5m0s")
		if c := h.calls(); len(c) != 1 || c[0].Ref.UID != "web-2" {
			t.Errorf("got Deleter calls %v, want one for web-2", c)
		}
	})
}

// TestNoSecondDelete checks that a pod the Deleter has deleted is not deleted again while
// the cache still shows it alive (the informer has not caught up yet). Kube keeps the key
// of a finished eviction in its queue for this reason.
func TestNoSecondDelete(t *testing.T) {
	synctestRun(t, "pod update processed after the delete", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.setPod(newPod("web", "n1"))
		h.wait()
		h.expectDeleted("web@+0s")
		h.step(time.Second)
		// A toleration of another taint is added; the cache still shows the pod running.
		h.setPod(newPod("web", "n1", withTolerations(tolForever("b"))))
		h.wait()
		h.expectDeleted("web@+0s")
		h.expectPending()
		// The deleted pod has no open eviction: the update is not reported at all.
		h.expectEvents("web",
			"Scheduled default/web at +0s",
			"Started default/web (attempt 1)",
			"Succeeded default/web (attempt 1)",
		)
		// The pod's removal arrives; a pod re-created under its name is evicted anew.
		h.removePod("web")
		h.wait()
		h.setPod(newPod("web", "n1", withUID("web-2")))
		h.wait()
		h.expectDeleted("web@+0s", "web@+1s")
		if c := h.calls(); len(c) != 2 || c[1].Ref.UID != "web-2" {
			t.Errorf("got calls %v, want the second for web-2", c)
		}
	})

	synctestRun(t, "pod re-created before its removal is seen", func(t *testing.T) {
		// The informer merged the delete of web-1 and the add of web-2 into one update.
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.setPod(newPod("web", "n1"))
		h.wait()
		h.step(time.Second)
		h.setPod(newPod("web", "n1", withUID("web-2")))
		h.wait()
		h.expectDeleted("web@+0s", "web@+1s")
		if c := h.calls(); len(c) != 2 || c[0].Ref.UID != "web-1" || c[1].Ref.UID != "web-2" {
			t.Errorf("got calls %v, want web-1 then web-2", c)
		}
	})

	synctestRun(t, "node update while the Deleter runs", func(t *testing.T) {
		h := run(t, eviction.Options{})
		release := make(chan struct{})
		h.onDelete(func(context.Context, eviction.PodRef) error { <-release; return nil })
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1"))
		h.wait()
		h.step(time.Second)
		// The pod is due again (a new time: now) while its delete runs: the running eviction
		// stands for it, and nothing is scheduled anew.
		h.setNode(newNode("n1", noExecute("a", t0), noExecute("b", t0.Add(time.Second))))
		h.wait()
		close(release)
		h.wait()
		h.expectDeleted("web@+0s")
		if got := h.obs.Of(evictiontest.Scheduled); len(got) != 1 {
			t.Errorf("got Scheduled %v, want one", got)
		}
		if got := h.obs.Of(evictiontest.Skipped); len(got) != 0 {
			t.Errorf("got Skipped %v, want none", got)
		}
	})

	synctestRun(t, "dry run reports again", func(t *testing.T) {
		// Nothing is deleted in dry-run mode: every decision is reported.
		h := run(t, eviction.Options{DryRun: true})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.wait()
		h.setPod(newPod("web", "n1"))
		h.wait()
		h.setPod(newPod("web", "n1", withTolerations(tolForever("b"))))
		h.wait()
		if got := h.obs.Of(evictiontest.Succeeded); len(got) != 2 || !got[0].DryRun || !got[1].DryRun {
			t.Errorf("got Succeeded %v, want two in dry run", got)
		}
	})
}

// TestReplacedWhileTaken: a pod replaced by another of the same name (a new UID) while a
// delete worker has taken its eviction but not begun it (the only delete worker is busy
// with another pod) ends the old pod's eviction, Cancelled Replaced, and evicts the new
// pod on its own; the old pod is never deleted.
func TestReplacedWhileTaken(t *testing.T) {
	synctestRun(t, "taken, not begun", func(t *testing.T) {
		h := run(t, eviction.Options{ActWorkers: 1})
		release := make(chan struct{})
		h.onDelete(func(_ context.Context, ref eviction.PodRef) error {
			if ref.Name == "a" {
				<-release
			}
			return nil
		})
		h.setNode(newNode("n1", noExecute("k", t0)))
		tol := withTolerations(tolFor("k", 10))
		h.setPod(newPod("a", "n1", withUID("a-1"), tol))
		h.wait()
		h.setPod(newPod("b", "n1", withUID("b-1"), tol)) // due at the same time, after a
		h.wait()
		h.step(10 * time.Second) // the delete worker takes a and b; a's Deleter call blocks
		h.setPod(newPod("b", "n1", withUID("b-2"), tol))
		h.wait()
		close(release)
		h.wait()
		var got []string
		for _, e := range h.obs.Events() {
			if e.Pod.Name == "b" {
				got = append(got, fmt.Sprintf("%s %s", e.Kind, e.Pod.UID))
			}
		}
		want := []string{"Scheduled b-1", "Cancelled b-1", "Scheduled b-2", "Started b-2", "Succeeded b-2"}
		if !slices.Equal(got, want) {
			t.Errorf("events of b: got %v, want %v", got, want)
		}
		if c := h.calls(); len(c) != 2 || c[1].Ref.UID != "b-2" {
			t.Errorf("Deleter calls: got %v, want a-1 then b-2", c)
		}
	})
}
