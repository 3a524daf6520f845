package clientgo

import (
	"fmt"
	"reflect"
	"testing"
	"time"

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

// TestEventObserver checks the Events kube records: one on the first attempt, one on a
// cancel, ours when the brake pauses an eviction, none for the other decisions.
func TestEventObserver(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	o := EventObserver{Recorder: rec}
	pod := eviction.PodRef{Namespace: "shop", Name: "web-1", UID: "uid-1", Holder: "node-1"}

	o.Scheduled(pod, testNow)
	o.Delayed(pod, eviction.ReasonRateLimited) // routine: no Event
	o.Delayed(pod, eviction.ReasonInFlight)    // routine: no Event
	o.Delayed(pod, eviction.ReasonPaused)
	o.Delayed(pod, eviction.ReasonUnconfirmed)
	o.Started(pod, eviction.Attempt{Call: 1, Due: testNow})
	o.Failed(pod, eviction.Attempt{Call: 1}, errTest)
	o.Started(pod, eviction.Attempt{Call: 2, Due: testNow}) // a retry: no second Event
	o.Succeeded(pod, eviction.Attempt{Call: 2, Due: testNow}, false)
	o.Skipped(pod, eviction.ReasonPodFinished)
	o.Cancelled(pod, eviction.ReasonNotTainted)

	if got, want := drain(rec), []string{
		"Normal TaintManagerEviction Pausing deletion of Pod shop/web-1: " + PausedMessage,
		"Normal TaintManagerEviction Pausing deletion of Pod shop/web-1: " + ConfirmMessage,
		"Normal TaintManagerEviction Marking for deletion Pod shop/web-1",
		"Normal TaintManagerEviction Cancelling deletion of Pod shop/web-1",
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	// Without a recorder, nothing happens, and nothing breaks.
	EventObserver{}.Started(pod, eviction.Attempt{Call: 1, Due: testNow})
	EventObserver{}.Cancelled(pod, eviction.ReasonPodDeleted)
	EventObserver{}.Delayed(pod, eviction.ReasonPaused)
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
// ns/name"), up to the recorder.
func BenchmarkEventObserver(b *testing.B) {
	var msg string
	o := EventObserver{Recorder: sinkRecorder{&msg}}
	pod := eviction.PodRef{Namespace: "shop", Name: "web-1", UID: "2f6c8a4e-5d7b-4c1e-9a3f-8b0d6e2c4a17", Holder: "node-1"}
	b.ReportAllocs()
	for b.Loop() {
		o.Started(pod, eviction.Attempt{Call: 1, Due: time.Time{}})
	}
	if want := "Marking for deletion Pod shop/web-1"; msg != want {
		b.Fatalf("message %q, want %q", msg, want)
	}
}
