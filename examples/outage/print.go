package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// evictedPod is a pod the Manager evicted, and when.
type evictedPod struct {
	pod eviction.PodRef
	at  time.Time
}

// since formats t as +mm:ss since the start.
func since(t time.Time) string {
	d := t.Sub(start)
	return fmt.Sprintf("+%02d:%02d", int(d/time.Minute), int(d%time.Minute/time.Second))
}

// kindOrder orders the decisions about one pod within a step.
var kindOrder = map[evictiontest.Kind]int{
	evictiontest.Scheduled: 0, evictiontest.Cancelled: 1, evictiontest.Skipped: 2,
	evictiontest.Delayed: 3, evictiontest.Started: 4, evictiontest.Succeeded: 5, evictiontest.Failed: 6,
	kept: 7,
}

// print writes a step's decisions, ordered by pod (in the order of pods, so by node) and
// kind: the Manager makes them on several goroutines, in an order that changes from run to
// run. They were all made at the clock's current time.
func (c *cluster) print(events []evictiontest.Event) {
	slices.SortStableFunc(events, func(a, b evictiontest.Event) int {
		return cmp.Or(
			cmp.Compare(c.order[a.Pod.String()], c.order[b.Pod.String()]),
			cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]),
			a.At.Compare(b.At),
		)
	})
	now := c.clock.Now()
	for _, e := range events {
		var verb, detail string
		switch e.Kind {
		case evictiontest.Scheduled:
			verb, detail = "scheduled", "on "+e.Pod.Holder+", evict at "+since(e.At)
		case evictiontest.Cancelled:
			verb, detail = "cancelled", "on "+e.Pod.Holder+": "+string(e.Reason)
		case evictiontest.Skipped:
			verb, detail = "skipped", "on "+e.Pod.Holder+": "+string(e.Reason)
		case evictiontest.Succeeded:
			verb, detail = "evicted", "from "+e.Pod.Holder
			c.evicted = append(c.evicted, evictedPod{e.Pod, now})
		case evictiontest.Failed:
			verb, detail = "failed", "on "+e.Pod.Holder+": "+e.Err.Error()
		case evictiontest.Delayed:
			verb, detail = "delayed", "on "+e.Pod.Holder+": "+string(e.Reason)
		case kept:
			verb, detail = "kept", "on "+e.Pod.Holder+", nothing scheduled ("+c.about[e.Pod.String()]+")"
		default:
			continue // Started: the Deleter is called; "evicted" follows
		}
		fmt.Fprintf(c.w, "%s    %-9s  %-16s  %s\n", since(now), verb, e.Pod, detail)
	}
}

// kept is a pseudo-decision: a pod on a node just tainted that the Manager made no
// decision about. It tolerates the taint forever, so nothing is scheduled.
const kept evictiontest.Kind = "Kept"

// withKept adds an event for each pod of a node just tainted that events do not name: the
// Manager opened no eviction for it, so it reports nothing. A pod that had finished is
// shown as skipped (the Manager leaves a pod that is already leaving alone), any other as
// kept.
func (c *cluster) withKept(events []evictiontest.Event) []evictiontest.Event {
	decided := map[string]bool{}
	for _, e := range events {
		decided[e.Pod.String()] = true
	}
	for _, p := range c.sc.pods {
		ref := eviction.PodRef{Namespace: p.namespace, Name: p.name, Holder: p.node}
		if !slices.Contains(c.tainted, p.node) || decided[ref.String()] {
			continue
		}
		if p.finished {
			events = append(events, evictiontest.Event{Kind: evictiontest.Skipped, Pod: ref, Reason: eviction.ReasonPodFinished})
		} else {
			events = append(events, evictiontest.Event{Kind: kept, Pod: ref})
		}
	}
	return events
}

// printPending writes the schedule the Manager holds (Manager.Pending).
func (c *cluster) printPending() {
	pending := c.m.Pending()
	slices.SortFunc(pending, func(a, b eviction.Pending) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Target.String(), b.Target.String()))
	})
	var list []string
	for _, p := range pending {
		item := p.Target.String() + " at " + since(p.At)
		if p.Delayed != "" {
			item += " (" + string(p.Delayed) + ")"
		}
		list = append(list, item)
	}
	if len(list) == 0 {
		list = []string{"none"}
	}
	fmt.Fprintf(c.w, "%s    pending:   %s\n", since(c.clock.Now()), strings.Join(list, ", "))
}

// printIntro writes what is simulated: the nodes and pods, with the tolerations that matter.
func (c *cluster) printIntro() {
	fmt.Fprintf(c.w, "%s: %d nodes in 2 zones, %d pods, one eviction.Manager.\n", c.sc.intro, len(nodes), len(c.sc.pods))
	fmt.Fprintf(c.w, "The clock is fake and moves %v at a time; the output is the same on every run.\n\n", tick)
	key := cmp.Or(c.sc.key, unreachable)
	fmt.Fprintf(c.w, "Pods, and what they tolerate of %s:NoExecute:\n", key)
	for _, n := range nodes {
		label := n.zone + "  " + n.name
		for _, p := range c.sc.pods {
			if p.node == n.name {
				fmt.Fprintf(c.w, "  %-15s  %-16s  %s\n", label, p.namespace+"/"+p.name, p.about)
				label = ""
			}
		}
	}
	fmt.Fprintln(c.w)
}

// printSummary writes what was evicted, and what still runs, where.
func (c *cluster) printSummary() {
	fmt.Fprintf(c.w, "\nSummary at %s:\n", since(c.clock.Now()))
	fmt.Fprintf(c.w, "  evicted (%d):\n", len(c.evicted))
	for _, e := range c.evicted {
		fmt.Fprintf(c.w, "    %-16s  from %s at %s\n", e.pod, e.pod.Holder, since(e.at))
	}
	var running, finished []string
	for _, n := range nodes {
		list, _ := c.cache.PodsOnNode(n.name)
		slices.SortFunc(list, func(a, b *v1.Pod) int {
			return cmp.Compare(c.order[a.Namespace+"/"+a.Name], c.order[b.Namespace+"/"+b.Name])
		})
		for _, p := range list {
			line := fmt.Sprintf("    %-16s  on %s (%s)", p.Namespace+"/"+p.Name, n.name, n.zone)
			if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
				finished = append(finished, line)
			} else {
				running = append(running, line)
			}
		}
	}
	fmt.Fprintf(c.w, "  still running (%d):\n%s\n", len(running), strings.Join(running, "\n"))
	if len(finished) > 0 {
		fmt.Fprintf(c.w, "  finished before the outage, left alone (%d):\n%s\n", len(finished), strings.Join(finished, "\n"))
	}
}
