package clientgo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/tools/record"

	"github.com/taintevict/taintevict/eviction"
)

// drain returns the events the fake recorder holds.
func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestEventObserver checks the Events kube records: one on the first attempt, one on a
// cancel, ours when the brake pauses an eviction, none for the other decisions.
func TestEventObserver(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	o := EventObserver{Recorder: rec}
	pod := eviction.PodRef{Namespace: "shop", Name: "web-1", UID: "uid-1", Node: "node-1"}

	o.Scheduled(pod, testNow)
	o.Delayed(pod, eviction.ReasonRateLimited) // routine: no Event
	o.Delayed(pod, eviction.ReasonPaused)
	o.Started(pod, 1, testNow)
	o.Failed(pod, 1, assert.AnError)
	o.Started(pod, 2, testNow) // a retry: no second Event
	o.Succeeded(pod, 2, testNow, false)
	o.Skipped(pod, eviction.ReasonPodFinished)
	o.Cancelled(pod, eviction.ReasonNotTainted)

	assert.Equal(t, []string{
		"Normal TaintManagerEviction Pausing deletion of Pod shop/web-1: " + PausedMessage,
		"Normal TaintManagerEviction Marking for deletion Pod shop/web-1",
		"Normal TaintManagerEviction Cancelling deletion of Pod shop/web-1",
	}, drain(rec))

	// Without a recorder, nothing happens, and nothing breaks.
	EventObserver{}.Started(pod, 1, testNow)
	EventObserver{}.Cancelled(pod, eviction.ReasonPodDeleted)
	EventObserver{}.Delayed(pod, eviction.ReasonPaused)
}
