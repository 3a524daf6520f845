package device

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/record"

	"github.com/taintevict/taintevict/eviction/engine"
)

// TestEventObserver: the Events kube's device controller records, for each report.
func TestEventObserver(t *testing.T) {
	web := engine.Ref{Namespace: "ns", Name: "web", UID: "uid-web"}
	for _, tc := range []struct {
		name   string
		report func(EventObserver)
		want   string // "" for none
	}{
		{"first attempt", func(o EventObserver) { o.Started(web, engine.Attempt{Call: 1, Due: time.Time{}}) }, "Normal DeviceTaintManagerEviction Marking for deletion"},
		{"a retry", func(o EventObserver) { o.Started(web, engine.Attempt{Call: 2, Due: time.Time{}}) }, ""},
		{"cancelled, the taint removed", func(o EventObserver) { o.Cancelled(web, engine.ReasonNotTainted) }, "Normal DeviceTaintManagerEviction Cancelling deletion"},
		{"cancelled, the pod deleted", func(o EventObserver) { o.Cancelled(web, engine.ReasonTargetDeleted) }, ""},
		{"cancelled, the pod replaced", func(o EventObserver) { o.Cancelled(web, engine.ReasonReplaced) }, ""},
		{"paused", func(o EventObserver) { o.Delayed(web, engine.ReasonPaused) }, "Normal DeviceTaintManagerEviction " + PausedMessage},
		{"held until confirmed", func(o EventObserver) { o.Delayed(web, engine.ReasonUnconfirmed) }, "Normal DeviceTaintManagerEviction " + ConfirmMessage},
		{"in flight: routine", func(o EventObserver) { o.Delayed(web, engine.ReasonInFlight) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(4)
			tc.report(EventObserver{Recorder: rec})
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
	EventObserver{}.Started(web, engine.Attempt{Call: 1, Due: time.Time{}}) // no Recorder: records nothing, and does not panic
}
