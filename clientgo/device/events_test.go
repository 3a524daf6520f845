package device

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/record"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction/engine"
)

// TestEvents: the Events kube's device controller records, for each report, through
// clientgo's EventObserver with the device side's Events.
func TestEvents(t *testing.T) {
	web := engine.Ref{Namespace: "ns", Name: "web", UID: "uid-web"}
	for _, tc := range []struct {
		name   string
		report func(*clientgo.EventObserver)
		want   string // "" for none
	}{
		{"first call, before an answer", func(o *clientgo.EventObserver) { o.Started(web, engine.Attempt{Call: 1, Due: time.Time{}}) }, ""},
		{"found", func(o *clientgo.EventObserver) { o.Found(web) }, "Normal DeviceTaintManagerEviction Marking for deletion"},
		{"found again, on a retry", func(o *clientgo.EventObserver) { o.Found(web); o.Found(web) }, "Normal DeviceTaintManagerEviction Marking for deletion"},
		{"cancelled, the taint removed", func(o *clientgo.EventObserver) { o.Cancelled(web, engine.ReasonNotTainted) }, "Normal DeviceTaintManagerEviction Cancelling deletion"},
		{"cancelled, the device gone", func(o *clientgo.EventObserver) { o.Cancelled(web, engine.ReasonHolderDeleted) }, "Normal DeviceTaintManagerEviction Cancelling deletion"},
		{"cancelled, the claim deallocated", func(o *clientgo.EventObserver) { o.Cancelled(web, engine.ReasonUnbound) }, "Normal DeviceTaintManagerEviction Cancelling deletion"},
		{"cancelled, the pod deleted", func(o *clientgo.EventObserver) { o.Cancelled(web, engine.ReasonTargetDeleted) }, ""},
		{"cancelled, the pod replaced", func(o *clientgo.EventObserver) { o.Cancelled(web, engine.ReasonReplaced) }, ""},
		{"paused", func(o *clientgo.EventObserver) { o.Delayed(web, engine.ReasonPaused) }, "Normal DeviceTaintManagerEviction " + PausedMessage},
		{"held until confirmed", func(o *clientgo.EventObserver) { o.Delayed(web, engine.ReasonUnconfirmed) }, "Normal DeviceTaintManagerEviction " + ConfirmMessage},
		{"in flight: routine", func(o *clientgo.EventObserver) { o.Delayed(web, engine.ReasonInFlight) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(4)
			tc.report(clientgo.NewEventObserver(rec, clientgo.EventObserverOptions{Events: Events}))
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("got Events %q, want none", got)
			case tc.want != "" && (len(got) != 1 || got[0] != tc.want):
				t.Errorf("got Events %q, want %q", got, tc.want)
			}
		})
	}
}
