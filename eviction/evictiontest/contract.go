package evictiontest

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
)

// CheckContract checks that events, an [Observer]'s reports about one target (see
// [EventsOf]), keep [engine.Observer]'s contract: an eviction opens with its first Scheduled
// and closes with exactly one Succeeded, Cancelled or Skipped, and nothing comes while none
// is open; its UID stays the same while it is open; Delayed comes before its first call, or
// before a retry for the budgets that hold retries too (Paused, Unconfirmed, NotSynced);
// each Started has exactly one outcome before the next, and the calls count 1, 2, 3...; a
// Failed with no call (Attempt 0) never comes while a call runs. running says a call is
// under way as the reports end. It returns whether the reports leave an eviction open, or
// what broke the contract.
func CheckContract(events []Event, running bool) (open bool, err error) {
	var uid types.UID
	started, calls := -1, 0
	anew := false // a retry a condition held is let go anew: any budget may hold it then
	for i, e := range events {
		if e.Kind != Scheduled && !open {
			return false, fmt.Errorf("report %d (%v) while no eviction is open", i, e)
		}
		if open && e.Pod.UID != uid {
			return false, fmt.Errorf("report %d (%v) is about UID %s, but the open eviction is of %s", i, e, e.Pod.UID, uid)
		}
		switch e.Kind {
		case Scheduled:
			if !open {
				open, uid, calls = true, e.Pod.UID, 0
			}
		case Delayed:
			if started >= 0 || calls > 0 && !anew && !slices.Contains(retryReasons, e.Reason) {
				return false, fmt.Errorf("report %d (%v) after a call", i, e)
			}
			anew = anew || calls > 0
		case Started:
			if started >= 0 {
				return false, fmt.Errorf("report %d (%v) follows the Started at %d with no outcome", i, e, started)
			}
			if e.Attempt != calls+1 {
				return false, fmt.Errorf("report %d (%v): call %d, want %d", i, e, e.Attempt, calls+1)
			}
			started, calls, anew = i, e.Attempt, false
		case Failed:
			switch {
			case e.Attempt == 0 && started >= 0:
				return false, fmt.Errorf("report %d (%v): a failure before a call while the call of %d runs", i, e, started)
			case e.Attempt != 0 && (started < 0 || e.Attempt != calls):
				return false, fmt.Errorf("report %d (%v) is not about the call under way (%d)", i, e, calls)
			}
			started = -1
		case Succeeded:
			if !e.DryRun && (started < 0 || e.Attempt != calls) {
				return false, fmt.Errorf("report %d (%v) is not about the call under way (%d)", i, e, calls)
			}
			open, started = false, -1
		default: // Cancelled, Skipped
			open, started = false, -1
		}
	}
	if started >= 0 && !running {
		return false, fmt.Errorf("the Started at %d has no outcome", started)
	}
	return open, nil
}

// Targets returns the keys of the targets the events are about, in the order of their
// first report.
func Targets(events []Event) []types.NamespacedName {
	var out []types.NamespacedName
	for _, e := range events {
		if k := e.Pod.Key(); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// EventsOf returns the events about the target key, in order.
func EventsOf(events []Event, key types.NamespacedName) []Event {
	return slices.DeleteFunc(slices.Clone(events), func(e Event) bool { return e.Pod.Key() != key })
}

// retryReasons are the Delayed reasons of the budgets that hold a retry too.
var retryReasons = []engine.Reason{engine.ReasonPaused, engine.ReasonUnconfirmed, engine.ReasonNotSynced}
