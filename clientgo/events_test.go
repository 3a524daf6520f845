package clientgo

import (
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
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

// TestEventObserver checks the Events kube's taint eviction controller records: Marking
// once the Deleter's first answer found the pod (not at a call whose request failed before
// it, nor again on a retry), Cancelling for the cancellations kube reports, ours when the
// brake pauses an eviction, none for the other decisions; and that it keeps nothing of an
// eviction that ended.
func TestEventObserver(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	o := NewEventObserver(rec, EventObserverOptions{})
	pod := eviction.PodRef{Namespace: "shop", Name: "web-1", UID: "uid-1", Holder: "node-1"}

	o.Scheduled(pod, testNow)
	o.Delayed(pod, eviction.ReasonRateLimited) // routine: no Event
	o.Delayed(pod, eviction.ReasonInFlight)    // routine: no Event
	o.Delayed(pod, eviction.ReasonPaused)
	o.Delayed(pod, eviction.ReasonUnconfirmed)
	o.Started(pod, eviction.Attempt{Call: 1, Due: testNow})
	o.Failed(pod, eviction.Attempt{Call: 1}, errTest) // before any answer: no Event
	o.Started(pod, eviction.Attempt{Call: 2, Due: testNow})
	o.Found(pod)
	o.Failed(pod, eviction.Attempt{Call: 2}, errTest) // the DELETE failed
	o.Started(pod, eviction.Attempt{Call: 3, Due: testNow})
	o.Found(pod) // a retry: no second Event
	o.Removed(pod, MethodDelete, false)
	o.Succeeded(pod, eviction.Attempt{Call: 3, Due: testNow}, false)
	o.Skipped(pod, eviction.ReasonPodFinished)
	o.Cancelled(pod, eviction.ReasonNotTainted)
	o.Cancelled(pod, eviction.ReasonNodeDeleted) // kube cancels nothing for a deleted node
	o.Cancelled(pod, eviction.ReasonPodReplaced) // nor for a pod replaced under its name
	o.Cancelled(pod, eviction.ReasonPodDeleted)  // but it does for a pod deleted
	again := eviction.PodRef{Namespace: "shop", Name: "web-2", UID: "uid-2", Holder: "node-1"}
	o.Found(again) // found, then cancelled while its DELETE ran
	o.Cancelled(again, eviction.ReasonNotTainted)

	if got, want := drain(rec), []string{
		"Normal TaintManagerEviction Pausing deletion of Pod shop/web-1: " + PausedMessage,
		"Normal TaintManagerEviction Pausing deletion of Pod shop/web-1: " + ConfirmMessage,
		"Normal TaintManagerEviction Marking for deletion Pod shop/web-1",
		"Normal TaintManagerEviction Cancelling deletion of Pod shop/web-1",
		"Normal TaintManagerEviction Cancelling deletion of Pod shop/web-1",
		"Normal TaintManagerEviction Marking for deletion Pod shop/web-2",
		"Normal TaintManagerEviction Cancelling deletion of Pod shop/web-2",
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if len(o.marked) != 0 {
		t.Errorf("kept of evictions that ended: got %v, want nothing", o.marked)
	}

	// Without a recorder, nothing happens, and nothing breaks.
	none := NewEventObserver(nil, EventObserverOptions{})
	none.Found(pod)
	none.Cancelled(pod, eviction.ReasonPodDeleted)
	none.Delayed(pod, eviction.ReasonPaused)
}

// sinkRecorder formats Events as client-go's recorder does (Eventf with fmt.Sprintf) and
// keeps the message in a sink, so that a benchmark measures the observer and the
// formatting, not the broadcaster behind.
type sinkRecorder struct{ sink *string }

func (r sinkRecorder) Event(_ runtime.Object, _, _, message string) { *r.sink = message }
func (r sinkRecorder) Eventf(_ runtime.Object, _, _, format string, args ...any) {
	*r.sink = fmt.Sprintf(format, args...)
}
func (r sinkRecorder) AnnotatedEventf(_ runtime.Object, _ map[string]string, _, _, format string, args ...any) {
	*r.sink = fmt.Sprintf(format, args...)
}

// BenchmarkEventObserver is the Event of one evicted pod ("Marking for deletion Pod
// ns/name"), up to the recorder: its Deleter found it, then removed it.
func BenchmarkEventObserver(b *testing.B) {
	var msg string
	o := NewEventObserver(sinkRecorder{&msg}, EventObserverOptions{})
	pod := eviction.PodRef{Namespace: "shop", Name: "web-1", UID: "2f6c8a4e-5d7b-4c1e-9a3f-8b0d6e2c4a17", Holder: "node-1"}
	b.ReportAllocs()
	for b.Loop() {
		o.Found(pod)
		o.Removed(pod, MethodDelete, false)
	}
	if want := "Marking for deletion Pod shop/web-1"; msg != want {
		b.Fatalf("message %q, want %q", msg, want)
	}
}
