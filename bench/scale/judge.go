package scale

import (
	"slices"
	"time"

	"github.com/taintevict/taintevict/bench/realapiserver"
)

// Record is one request of the audit log (bench/realapiserver reads it).
type Record = realapiserver.Record

// expect is what a phase of a run must do, as the audit log is read for it.
type expect struct {
	// users are the side's user names (the replicas of a failover share one).
	users map[string]bool
	// due are the pods the phase must remove, each once and not before its deadline.
	due map[podRef]time.Time
	// spared are the pods the phase must not write to at all.
	spared map[podRef]bool
	// from is when the phase starts: earlier requests are not its.
	from time.Time
	// evict: a removal is a create pods/eviction; else a DELETE.
	evict bool
	// seen and scanned are auditLog.removed's count so far: the due pods removed in the
	// first scanned records.
	seen    map[podRef]bool
	scanned int
}

// outcome is what the audit log says of a phase. Times are seconds after from; -1 while
// there is none.
type outcome struct {
	Due, Removed int
	// First, Half and Last are when the first, the median and the last due pod's first
	// successful removal completed.
	First, Half, Last float64
	// RemovedTwice counts due pods removed successfully more than once; Early those whose
	// removal was sent before their deadline; TouchedSpared spared pods written to.
	RemovedTwice, Early, TouchedSpared int
	// Requests counts the side's requests about pods and Events by What; Errors its
	// responses of 400 or more by code.
	Requests map[string]int `json:",omitempty"`
	Errors   map[int]int    `json:",omitempty"`
	// Events is the number of Events the side wrote.
	Events int
	// Unacked counts due pods whose only removals were answered 5xx (the request of a
	// process killed in the middle of it, or a timeout) but that were removed all the same:
	// their pod carries a deletionTimestamp (see run.unacked). Removed does not count them.
	Unacked int
	// firsts are the first removals' completion times, in order.
	firsts []time.Time
}

// judge reads recs as e says.
func judge(recs []Record, e expect) outcome {
	o := outcome{Due: len(e.due), First: -1, Half: -1, Last: -1, Requests: map[string]int{}, Errors: map[int]int{}}
	removals := map[podRef][]Record{}
	touched := map[podRef]bool{}
	for _, r := range recs {
		if !e.users[r.User] || r.Completed.Before(e.from) {
			continue
		}
		if r.Resource == "pods" || r.Resource == "events" {
			o.Requests[r.What()]++
			if r.Code >= 400 {
				o.Errors[r.Code]++
			}
		}
		ref := podRef{r.Namespace, r.Name}
		ok := r.Code >= 200 && r.Code < 300
		switch {
		case r.Resource == "events" && (r.Verb == "create" || r.Verb == "patch") && ok:
			o.Events++
		case r.Resource != "pods" || r.Verb == "get":
		case e.spared[ref]:
			touched[ref] = true
		case ok && removes(r, e.evict):
			if _, isDue := e.due[ref]; isDue {
				removals[ref] = append(removals[ref], r)
			}
		}
	}
	o.TouchedSpared = len(touched)
	for ref, rs := range removals {
		if len(rs) > 1 {
			o.RemovedTwice++
		}
		first := slices.MinFunc(rs, func(a, b Record) int { return a.Completed.Compare(b.Completed) })
		if first.Received.Before(e.due[ref]) {
			o.Early++
		}
		o.firsts = append(o.firsts, first.Completed)
	}
	slices.SortFunc(o.firsts, time.Time.Compare)
	o.Removed = len(o.firsts)
	since := func(t time.Time) float64 { return t.Sub(e.from).Seconds() }
	if n := len(o.firsts); n > 0 {
		o.First, o.Last = since(o.firsts[0]), since(o.firsts[n-1])
		if half := (o.Due+1)/2 - 1; half < n {
			o.Half = since(o.firsts[half])
		}
	}
	return o
}

// removes says whether r removes its pod: a DELETE, or with the Eviction API a create
// pods/eviction.
func removes(r Record, evict bool) bool {
	if evict {
		return r.Verb == "create" && r.Subresource == "eviction"
	}
	return r.Verb == "delete" && r.Subresource == ""
}

// removalRequests is the side's requests about pods per due pod (its Events not counted).
func (o outcome) removalRequests() float64 {
	n := 0
	for what, c := range o.Requests {
		if len(what) > 4 && what[len(what)-6:] != "events" {
			n += c
		}
	}
	if o.Due == 0 {
		return 0
	}
	return float64(n) / float64(o.Due)
}

// correct says whether every due pod was removed once, none early, and no spared pod
// written to.
func (o outcome) correct() bool {
	return o.Removed+o.Unacked == o.Due && o.RemovedTwice == 0 && o.Early == 0 && o.TouchedSpared == 0
}

// unanswered returns the due pods of e whose removals in recs all failed with a 5xx.
func unanswered(recs []Record, e expect) []podRef {
	failed, removed := map[podRef]bool{}, map[podRef]bool{}
	for _, r := range recs {
		ref := podRef{r.Namespace, r.Name}
		if _, due := e.due[ref]; !due || !e.users[r.User] || r.Completed.Before(e.from) || r.Resource != "pods" || !removes(r, e.evict) {
			continue
		}
		switch {
		case r.Code >= 200 && r.Code < 300:
			removed[ref] = true
		case r.Code >= 500:
			failed[ref] = true
		}
	}
	var out []podRef
	for ref := range failed {
		if !removed[ref] {
			out = append(out, ref)
		}
	}
	return out
}
