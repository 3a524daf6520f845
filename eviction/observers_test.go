package eviction_test

import (
	"errors"
	"testing"
	"time"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestObservers checks that each observer is told every decision, in order, and that an
// empty Observers tells no one without failing.
func TestObservers(t *testing.T) {
	a, b := &evictiontest.Observer{}, &evictiontest.Observer{}
	var obs eviction.Observer = eviction.Observers{a, b}
	pod := eviction.PodRef{Namespace: "shop", Name: "web-1", UID: "u1", Holder: "n1"}
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	obs.Scheduled(pod, at)
	obs.Cancelled(pod, eviction.ReasonTolerated)
	obs.Skipped(pod, eviction.ReasonPodFinished)
	obs.Started(pod, eviction.Attempt{Call: 1, Due: at})
	obs.Failed(pod, eviction.Attempt{Call: 1, Due: at}, errors.New("x"))
	obs.Succeeded(pod, eviction.Attempt{Call: 2, Due: at.Add(time.Second)}, true)
	want := []evictiontest.Kind{evictiontest.Scheduled, evictiontest.Cancelled, evictiontest.Skipped, evictiontest.Started, evictiontest.Failed, evictiontest.Succeeded}
	for name, o := range map[string]*evictiontest.Observer{"first": a, "second": b} {
		got := o.Events()
		if len(got) != len(want) {
			t.Fatalf("%s observer: got %d events, want %d", name, len(got), len(want))
		}
		for i, e := range got {
			if e.Kind != want[i] || e.Pod != pod {
				t.Errorf("%s observer, event %d: got %s %v, want %s %v", name, i, e.Kind, e.Pod, want[i], pod)
			}
		}
		if !got[0].At.Equal(at) || got[1].Reason != eviction.ReasonTolerated || !got[3].At.Equal(at) ||
			got[5].Attempt != 2 || !got[5].At.Equal(at.Add(time.Second)) || !got[5].DryRun {
			t.Errorf("%s observer: arguments not passed on: %v", name, got)
		}
	}
	eviction.Observers(nil).Started(pod, eviction.Attempt{Call: 1, Due: at}) // tells no one
}
