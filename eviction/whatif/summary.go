package whatif

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction/engine"
)

// Summary counts the pods of a what-if by what the change does to them.
type Summary struct {
	// Pods is the number of pods on the changed nodes (or targets on the changed holders).
	Pods int
	// Now: the change evicts them at once (they were not going at once), in Namespaces
	// namespaces. Later: later than the start (or sooner than before), the last at Last.
	Now, Namespaces, Later int
	Last                   time.Duration
	// Forever: they tolerate every NoExecute taint of their node forever.
	Forever int
	// Held: they fall due, but the brake holds them, in zones HeldZones (sorted).
	// Unconfirmed: Confirm holds them until an operator confirms the taint.
	Held        int
	HeldZones   []string
	Unconfirmed int
	// Cancelled: they were going (or held) before the change, and stay.
	Cancelled int
	// Leaving: they are leaving on their own (finished, or being deleted).
	Leaving int
	// Unchanged: the others, whose fate the change does not change.
	Unchanged int
}

// Summary counts r's pods.
func (r *Result) Summary() Summary {
	t := tally{start: r.Start}
	for _, p := range r.Pods {
		t.add(p.Before, p.After, tolerated(p.Why), p.Pod.Namespace, p.Zone)
	}
	return t.summary(len(r.Pods))
}

// Summary counts r's targets; HeldZones are the groups (a device's pool) of the holders
// whose taints the held targets wait on.
func (r *HoldersResult[T]) Summary() Summary {
	t := tally{start: r.Start}
	groups := map[string]string{}
	for _, h := range r.Changed {
		groups[h.Name] = h.Group
	}
	for _, tf := range r.Targets {
		forever := len(tf.Bound) > 0
		for _, b := range tf.Bound {
			forever = forever && tolerated(b.Why)
		}
		t.add(tf.Before, tf.After, forever, tf.Key.Namespace, groups[tf.After.Holder])
	}
	return t.summary(len(r.Targets))
}

// tally counts outcomes into a Summary.
type tally struct {
	start             time.Time
	s                 Summary
	namespaces, zones []string // of the pods evicted now, and held by the brake
}

// add counts one target: its fates, whether it tolerates every NoExecute taint forever, its
// namespace and its zone (or pool).
func (t *tally) add(before, after Fate, forever bool, namespace, zone string) {
	s := &t.s
	switch {
	case after.Verdict == Leaving:
		s.Leaving++
	case !changed(before, after):
		if after.Verdict == Stays && forever {
			s.Forever++
		} else {
			s.Unchanged++
		}
	case after.Verdict == Evicted && !after.At.After(t.start):
		s.Now++
		t.namespaces = append(t.namespaces, namespace)
	case after.Verdict == Evicted || after.Verdict == Pending:
		s.Later++
		s.Last = max(s.Last, after.At.Sub(t.start))
	case after.Verdict == Held && after.Delayed == engine.ReasonUnconfirmed:
		s.Unconfirmed++
	case after.Verdict == Held:
		s.Held++
		t.zones = append(t.zones, zone)
	case after.Verdict == Stays:
		if before.Verdict == Evicted || before.Verdict == Held || before.Verdict == Pending {
			s.Cancelled++
		} else if forever {
			s.Forever++
		}
	}
}

func (t *tally) summary(n int) Summary {
	slices.Sort(t.namespaces)
	slices.Sort(t.zones)
	s := t.s
	s.Pods, s.Namespaces, s.HeldZones = n, len(slices.Compact(t.namespaces)), slices.Compact(t.zones)
	return s
}

// tolerated reports whether why has a NoExecute taint and every one is tolerated forever.
func tolerated(why []Match) bool {
	for _, m := range why {
		if !m.Forever {
			return false
		}
	}
	return len(why) > 0
}

// String says what the change does in one line, e.g. "evicts 37 pods now (4 namespaces),
// 12 more within 5m0s; the brake would hold 5 pods in zone zone-a; 3 tolerate it forever";
// it starts "evicts no pod" when nothing is evicted. "Within" rounds up to the second.
func (s Summary) String() string {
	last := s.Last
	if last >= time.Second && last%time.Second != 0 {
		last = last.Truncate(time.Second) + time.Second
	}
	head := "evicts no pod"
	switch {
	case s.Now > 0:
		head = fmt.Sprintf("evicts %s now (%s)", plural(s.Now, "pod"), plural(s.Namespaces, "namespace"))
		if s.Later > 0 {
			head += fmt.Sprintf(", %d more within %s", s.Later, last)
		}
	case s.Later > 0:
		head = fmt.Sprintf("evicts %s within %s", plural(s.Later, "pod"), last)
	}
	parts := []string{head}
	if s.Held > 0 {
		where := ""
		if zones := slices.DeleteFunc(slices.Clone(s.HeldZones), func(z string) bool { return z == "" }); len(zones) > 0 {
			where = " in zone " + strings.Join(zones, ", ")
		}
		parts = append(parts, fmt.Sprintf("the brake would hold %s%s", plural(s.Held, "pod"), where))
	}
	if s.Unconfirmed > 0 {
		parts = append(parts, fmt.Sprintf("%s held until an operator confirms the taint", plural(s.Unconfirmed, "pod")))
	}
	if s.Forever > 0 {
		verb := "tolerate"
		if s.Forever == 1 {
			verb = "tolerates"
		}
		parts = append(parts, fmt.Sprintf("%d %s it forever", s.Forever, verb))
	}
	if s.Cancelled > 0 {
		parts = append(parts, fmt.Sprintf("cancels the eviction of %s", plural(s.Cancelled, "pod")))
	}
	return strings.Join(parts, "; ")
}

// plural returns "1 pod" or "n pods".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// zoneOf returns the node's topology.kubernetes.io/zone label, "" when it has none.
func zoneOf(n *v1.Node) string { return n.Labels[v1.LabelTopologyZone] }
