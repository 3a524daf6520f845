package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// tally is what the audit log shows of a scenario's evictions, for the pods of one
// namespace, over the requests of one or more controllers (a killed one and its
// successor).
type tally struct {
	// deletes is the number of successful deletes (DELETE, or an eviction) of each pod.
	deletes map[string]int
	// lost are the due pods with no successful delete.
	lost []string
	// doubled are the pods with a delete request after one that succeeded: a second
	// eviction of a pod that was already going.
	doubled []string
	// wrong are the pods that must stay and that a controller wrote to (a status patch, a
	// delete, an eviction).
	wrong []string
}

// removes says whether e asks to remove a pod: a DELETE or an eviction.
func removes(e auditEvent) bool {
	return e.ObjectRef != nil && e.ObjectRef.Resource == "pods" &&
		(e.Verb == "delete" && e.ObjectRef.Subresource == "" || e.Verb == "create" && e.ObjectRef.Subresource == "eviction")
}

// auditTally reads the audit log for the requests of ids about the pods of ns and tallies
// them against due (each must be removed exactly once) and kept (none may be written to).
func auditTally(t *testing.T, ns string, ids []identity, due, kept []string) tally {
	t.Helper()
	var events []auditEvent
	for _, id := range ids {
		e, err := auditEvents(id, inNamespace(ns))
		if err != nil {
			t.Fatalf("reading the audit log: %v", err)
		}
		events = append(events, e...)
	}
	// One controller's requests are in the log's order; a successor's came after its
	// predecessor's, and the order between two controllers is the server's receipt.
	slices.SortStableFunc(events, func(a, b auditEvent) int { return a.Received.Compare(b.Received) })

	tl := tally{deletes: map[string]int{}}
	isKept := map[string]bool{}
	for _, n := range kept {
		isKept[n] = true
	}
	var wrong, doubled []string
	for _, e := range events {
		if e.ObjectRef == nil || e.ObjectRef.Resource != "pods" {
			continue
		}
		name := e.ObjectRef.Name
		if isKept[name] && writesPod(ns, name)(e) {
			wrong = append(wrong, name)
		}
		if !removes(e) {
			continue
		}
		if tl.deletes[name] > 0 {
			doubled = append(doubled, name)
		}
		if e.code() < 300 {
			tl.deletes[name]++
		}
	}
	tl.wrong = uniq(wrong)
	tl.doubled = uniq(doubled)
	for _, n := range due {
		if tl.deletes[n] == 0 {
			tl.lost = append(tl.lost, n)
		}
	}
	return tl
}

func uniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// log logs the tally as the scenario tables quote it.
func (tl tally) log(t *testing.T, what string) {
	t.Helper()
	t.Logf("%s, from the audit log: evictions lost %d, wrong %d, doubled %d", what, len(tl.lost), len(tl.wrong), len(tl.doubled))
}

// check fails the test for each lost, wrong or doubled eviction.
func (tl tally) check(t *testing.T) {
	t.Helper()
	if len(tl.lost) > 0 {
		t.Errorf("%d due pods never deleted (audit log), e.g. %s", len(tl.lost), tl.lost[0])
	}
	if len(tl.wrong) > 0 {
		t.Errorf("%d pods that must stay written to (audit log): %v", len(tl.wrong), head(tl.wrong))
	}
	if len(tl.doubled) > 0 {
		t.Errorf("%d pods with a delete request after their deletion succeeded (audit log): %v", len(tl.doubled), head(tl.doubled))
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// closed polls the process's taintevict_evictions_total until the evictions closed with
// the given outcomes (as "outcome reason" pairs, e.g. {"succeeded", "delete"}) add up to
// want, or failAfter passes, and returns the count of each. The test sees a pod deleted a
// moment before the controller hears its DELETE's answer and counts it.
func (p *process) closed(t *testing.T, want int, series ...[2]string) []int {
	t.Helper()
	counts := make([]int, len(series))
	_ = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, failAfter, true, func(context.Context) (bool, error) {
		sum := 0
		for i, s := range series {
			counts[i] = int(p.metric(t, outcomes(s[0], s[1])))
			sum += counts[i]
		}
		return sum >= want, nil
	})
	return counts
}
