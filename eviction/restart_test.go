package eviction_test

import (
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestRestart stops a Manager 200 s into a pod's 300 s toleration and starts a fresh one on
// the same cluster state. By default the new Manager evicts at the same time, TimeAdded +
// 300 s; with FromObservation, kube's rule, the countdown starts again (issue 108268).
func TestRestart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		source    eviction.DeadlineSource
		timeAdded time.Time
		// when the second Manager deletes the pod
		wantAt time.Duration
	}{
		{"FromTimeAdded", eviction.FromTimeAdded, t0, 300 * time.Second},
		{"FromObservation restarts the countdown", eviction.FromObservation, t0, 500 * time.Second},
		// Without TimeAdded the countdown can only start when a Manager sees the taint.
		{"FromTimeAdded, taint without TimeAdded", eviction.FromTimeAdded, time.Time{}, 500 * time.Second},
		// A TimeAdded in the future counts from first sight: for a new Manager, the restart.
		{"FromTimeAdded, TimeAdded a year ahead", eviction.FromTimeAdded, t0.AddDate(1, 0, 0), 500 * time.Second},
	} {
		synctestRun(t, tc.name, func(t *testing.T) {
			clk := newFakeClock()
			cache := &evictiontest.Cache{}
			node := newNode("n1", noExecute("a", tc.timeAdded))
			pod := newPod("web", "n1", withTolerations(tolFor("a", 300)))
			cache.SetNode(node)
			cache.SetPod(pod)

			// start runs a Manager fed the cluster state, as an informer's initial list does.
			start := func(del *evictiontest.Deleter) (manager, func()) {
				m, err := newManager(t, del, cache, eviction.Options{Clock: clk, DeadlineSource: tc.source})
				if err != nil {
					t.Fatal(err)
				}
				m.NodeUpdated(nil, node)
				m.PodUpdated(nil, pod)
				return m, startManager(t, m)
			}

			first := &evictiontest.Deleter{}
			m1, stop1 := start(first)
			if p := m1.Pending(); len(p) != 1 || !p[0].At.Equal(t0.Add(300*time.Second)) {
				t.Fatalf("first Manager: got Pending %v, want web at +5m", p)
			}
			clk.Step(200 * time.Second)
			synctest.Wait()
			stop1()

			second := &evictiontest.Deleter{}
			m2, stop2 := start(second)
			defer stop2()
			if p := m2.Pending(); len(p) != 1 || !p[0].At.Equal(t0.Add(tc.wantAt)) {
				t.Fatalf("second Manager: got Pending %v, want web at %s", p, rel(t0.Add(tc.wantAt)))
			}
			for _, at := range []time.Duration{299 * time.Second, 300*time.Second - time.Nanosecond, 300 * time.Second, tc.wantAt - time.Nanosecond, tc.wantAt} {
				now := clk.Now().Sub(t0)
				if at < now {
					continue
				}
				clk.Step(at - now)
				synctest.Wait()
				wantCalls := 0
				if at >= tc.wantAt {
					wantCalls = 1
				}
				if got := second.Count(); got != wantCalls {
					t.Fatalf("at %s: got %d deletions, want %d", rel(clk.Now()), got, wantCalls)
				}
			}
			if first.Count() != 0 {
				t.Errorf("the stopped Manager deleted %v", first.Calls())
			}
			if c := second.Calls(); c[0] != (eviction.PodRef{Namespace: ns, Name: "web", UID: "web-1", Holder: "n1"}) {
				t.Errorf("got Deleter call %+v", c[0])
			}
		})
	}
}

// TestFromObservationKeepsCountdown checks that with FromObservation a pod's countdown
// starts when the Manager first schedules it and is kept across updates that recompute it,
// as long as the Manager runs.
func TestFromObservationKeepsCountdown(t *testing.T) {
	synctestRun(t, "toleration shortened", func(t *testing.T) {
		h := run(t, eviction.Options{DeadlineSource: eviction.FromObservation})
		// TimeAdded is ignored: the countdown starts when the Manager sees the taint.
		h.step(time.Minute)
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 600))))
		h.wait()
		h.expectPending("web@+11m0s")
		h.step(time.Minute)
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.wait()
		h.expectPending("web@+6m0s")
		h.stepTo(6*time.Minute - time.Nanosecond)
		h.expectDeleted()
		h.step(time.Nanosecond)
		h.expectDeleted("web@+6m0s")
	})

	synctestRun(t, "second taint", func(t *testing.T) {
		h := run(t, eviction.Options{DeadlineSource: eviction.FromObservation})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 600), tolFor("b", 300))))
		h.wait()
		h.expectPending("web@+10m0s")
		h.step(2 * time.Minute)
		// kube's rule: since + the smallest toleration, since being the first schedule.
		h.setNode(newNode("n1", noExecute("a", t0), v1.Taint{Key: "b", Effect: v1.TaintEffectNoExecute}))
		h.wait()
		h.expectPending("web@+5m0s")
	})
}
