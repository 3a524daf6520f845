package e2e

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// ledger is what the audit log says a controller did to the pods of a namespace: for each
// pod, its DELETE requests in the order the server logged them, and its other writes.
type ledger struct {
	deletes map[string][]auditEvent
	writes  map[string][]auditEvent // status patches, evictions: any write but a DELETE
}

// readLedger reads the ledger of id in namespace ns.
func readLedger(id identity, ns string) (ledger, error) {
	l := ledger{deletes: map[string][]auditEvent{}, writes: map[string][]auditEvent{}}
	events, err := auditEvents(id, func(e auditEvent) bool {
		return e.ObjectRef != nil && e.ObjectRef.Namespace == ns && e.ObjectRef.Resource == "pods" && e.ObjectRef.Name != "" &&
			e.Verb != "get" && e.Verb != "list" && e.Verb != "watch"
	})
	if err != nil {
		return l, err
	}
	for _, e := range events {
		if e.Verb == "delete" && e.ObjectRef.Subresource == "" {
			l.deletes[e.ObjectRef.Name] = append(l.deletes[e.ObjectRef.Name], e)
		} else {
			l.writes[e.ObjectRef.Name] = append(l.writes[e.ObjectRef.Name], e)
		}
	}
	return l, nil
}

// deleted returns when the server received the pod's first DELETE that succeeded.
func (l ledger) deleted(pod string) (time.Time, bool) {
	for _, e := range l.deletes[pod] {
		if e.code() >= 200 && e.code() < 300 {
			return e.Received, true
		}
	}
	return time.Time{}, false
}

// faultTally is a fault scenario's outcome, from the audit log: when each due pod was
// deleted, and the evictions lost (due, never deleted), wrong (a pod that was not due,
// written to) and doubled (a DELETE received after the pod's successful one, whatever the
// controller was told of that one: PodDeleter sends no DELETE to a pod its status patch
// shows being deleted, so a retry after a lost answer sends none either).
//
// A DELETE the controller gave up on (its timeout), or one a killed server did not log, may
// still land: the audit log then shows no success for the pod, but the server shows it
// deleted, and the controller, which sees it terminating, tries no more. faultTally counts
// such a pod as evicted, at the time its deletion landed (its deletionTimestamp less its
// grace period, to the second), and names it in unanswered; which of its DELETEs landed is
// not known, so none of them counts as doubled.
type faultTally struct {
	deleted                          map[string]time.Time
	lost, wrong, doubled, unanswered []string
}

// waitEvictions polls the audit log until each pod of due has a successful DELETE of c, or
// failAfter has passed since the call, then waits settle more (for a late double) and
// returns the tally, with kept the pods that must not be written to.
func waitEvictions(t *testing.T, c *process, ns string, due, kept []string, settle time.Duration) faultTally {
	t.Helper()
	var l ledger
	_ = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, failAfter, true, func(ctx context.Context) (bool, error) {
		var err error
		if l, err = readLedger(c.id, ns); err != nil {
			return false, err
		}
		var missing []string
		for _, p := range due {
			if _, ok := l.deleted(p); !ok {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			return true, nil
		}
		landed, err := landedDeletes(ctx, ns)
		if err != nil {
			return false, nil // the server may be away: ask again
		}
		for _, p := range missing {
			if _, ok := landed[p]; !ok {
				return false, nil
			}
		}
		return true, nil
	})
	time.Sleep(settle)
	l, err := readLedger(c.id, ns)
	if err != nil {
		t.Fatalf("reading the audit log: %v", err)
	}
	landed, err := landedDeletes(t.Context(), ns)
	if err != nil {
		t.Fatalf("listing the pods: %v", err)
	}
	failed := c.failedAttempts(ns)
	tl := faultTally{deleted: map[string]time.Time{}}
	for _, p := range due {
		at, ok := l.deleted(p)
		if !ok {
			// Deleted by a DELETE of the controller that got no answer it waited for: one the
			// audit log shows, or one a killed server did not log, of an attempt that the
			// controller reported failed.
			if at, ok = landed[p]; !ok || len(l.deletes[p]) == 0 && len(failed[p]) == 0 {
				tl.lost = append(tl.lost, p)
				continue
			}
			tl.unanswered = append(tl.unanswered, p)
			tl.deleted[p] = at
			continue
		}
		tl.deleted[p] = at
		for _, e := range l.deletes[p] {
			if e.Received.After(at) {
				tl.doubled = append(tl.doubled, p)
			}
		}
	}
	for _, p := range kept {
		if len(l.deletes[p])+len(l.writes[p]) > 0 {
			tl.wrong = append(tl.wrong, p)
		}
	}
	return tl
}

// landedDeletes returns, for each pod of ns that is being deleted, when its deletion
// landed: its deletionTimestamp less its grace period (to the second).
func landedDeletes(ctx context.Context, ns string) (map[string]time.Time, error) {
	list, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			continue
		}
		at := p.DeletionTimestamp.Time
		if g := p.DeletionGracePeriodSeconds; g != nil {
			at = at.Add(-time.Duration(*g) * time.Second)
		}
		out[p.Name] = at
	}
	return out, nil
}

// failedAttempts returns, for each pod of ns, the times at which the controller's output
// reported an attempt to evict it failed.
func (p *process) failedAttempts(ns string) map[string][]time.Time {
	out := map[string][]time.Time{}
	now := time.Now()
	for line := range strings.Lines(p.out.String()) {
		f := strings.Fields(line)
		if len(f) < 3 || f[1] != "failed" {
			continue
		}
		pod, ok := strings.CutPrefix(f[2], ns+"/")
		if !ok {
			continue
		}
		at, err := time.ParseInLocation("15:04:05.000", f[0], time.Local)
		if err != nil {
			continue
		}
		at = time.Date(now.Year(), now.Month(), now.Day(), at.Hour(), at.Minute(), at.Second(), at.Nanosecond(), time.Local)
		out[pod] = append(out[pod], at)
	}
	return out
}

// log logs the tally's counts and the pods of each kind, for the e2e README's table.
func (tl faultTally) log(t *testing.T, scenario string) {
	t.Helper()
	t.Logf("%s: %d evicted; lost %d %v, wrong %d %v, doubled %d %v; deleted by a DELETE given up on: %d %v",
		scenario, len(tl.deleted), len(tl.lost), tl.lost, len(tl.wrong), tl.wrong, len(tl.doubled), tl.doubled, len(tl.unanswered), tl.unanswered)
}

// check fails the test for any eviction lost, wrong or doubled.
func (tl faultTally) check(t *testing.T) {
	t.Helper()
	if len(tl.lost)+len(tl.wrong)+len(tl.doubled) > 0 {
		t.Errorf("lost %v, wrong %v, doubled %v; want none", tl.lost, tl.wrong, tl.doubled)
	}
}

// last returns the latest of the deletion times of pods.
func (tl faultTally) last(pods []string) time.Time {
	var last time.Time
	for _, p := range pods {
		if at := tl.deleted[p]; at.After(last) {
			last = at
		}
	}
	return last
}

// sortedKeys is the sorted keys of m.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
