package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/whatif"
)

// reportVersion is the apiVersion of the reports -o json and -o yaml print.
var reportVersion = schema.GroupVersion{Group: "taintevict.io", Version: "v1alpha1"}

// Report is a what-if as -o json and -o yaml print it, and as the table shows it.
type Report struct {
	metav1.TypeMeta `json:",inline"`
	// Question says what was asked, e.g. "node node-7 gets example.com/down:NoExecute".
	Question string `json:"question"`
	// Start is "now": when the change would be made, and what the times count from.
	Start time.Time `json:"start"`
	// Namespace is the only namespace whose pods were listed, with -n; empty for all.
	Namespace string    `json:"namespace,omitempty"`
	Changes   []Changed `json:"changes"`
	Summary   Summary   `json:"summary"`
	// Notes say where the timeline cannot be exact, and which way the controller differs.
	Notes []string `json:"notes,omitempty"`
	// Groups are the totals by each --group-by, then the grand total (by "all").
	Groups []Group `json:"groups"`
	// Pods is the last field: writeJSON writes it apart.
	Pods []PodOutcome `json:"pods"`
}

// Changed is a node or a device as the change leaves it.
type Changed struct {
	Node   string     `json:"node,omitempty"`
	Device string     `json:"device,omitempty"`
	Taints []v1.Taint `json:"taints"`
}

// Summary is what the change does, in counts and in one sentence.
type Summary struct {
	Text string `json:"text"`
	// Pods is the number of pods on the changed nodes or devices.
	Pods int `json:"pods"`
	// Now are evicted at once by the change, Later after the start (the last LastSeconds
	// after it).
	Now         int     `json:"now"`
	Later       int     `json:"later"`
	LastSeconds float64 `json:"lastSeconds,omitempty"`
	Forever     int     `json:"forever"`
	Held        int     `json:"held"`
	// Unconfirmed are held by --confirm-fraction until an operator confirms the taint.
	Unconfirmed int `json:"unconfirmed,omitempty"`
	Cancelled   int `json:"cancelled"`
	Leaving     int `json:"leaving"`
	Unchanged   int `json:"unchanged"`
	// Refused is the number of evictions a PodDisruptionBudget would refuse (--mode=evict).
	Refused int `json:"refused"`
}

// Group is the totals of one group of pods (one namespace, node, zone or owner).
type Group struct {
	By        string `json:"by"`
	Name      string `json:"name"`
	Pods      int    `json:"pods"`
	Now       int    `json:"now"`
	Later     int    `json:"later"`
	Never     int    `json:"never"`
	Held      int    `json:"held"`
	Leaving   int    `json:"leaving"`
	Cancelled int    `json:"cancelled"`
	Refused   int    `json:"refused"`
}

// PodOutcome is one pod's what-if.
type PodOutcome struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node,omitempty"`
	// Device is the device whose taint decides, for a what-if of devices.
	Device string `json:"device,omitempty"`
	Zone   string `json:"zone,omitempty"`
	// Owner is the pod's controller, KIND/NAME, or "" for a bare pod.
	Owner string `json:"owner,omitempty"`
	// When is the table's column: "now", "+5m0s", "never", "held", "leaving", "cancelled".
	When string `json:"when"`
	// Reason says why, in words: the decisive taint and toleration.
	Reason string      `json:"reason"`
	After  Outcome     `json:"after"`
	Before *Outcome    `json:"before,omitempty"`
	Why    []WhyReport `json:"why,omitempty"`
	// RefusedBy names the PodDisruptionBudget that would refuse the eviction (--mode=evict).
	RefusedBy string `json:"refusedBy,omitempty"`
}

// Outcome is what the controller's engine did with a pod in the simulation.
type Outcome struct {
	// Verdict is Evicted, Stays, Held (a budget holds it), Pending (due after the
	// simulation's horizon) or Leaving (finished or terminating: never evicted).
	Verdict string `json:"verdict"`
	// At is when the pod is evicted (or, held, when it fell due); Seconds the same from Start.
	At      time.Time `json:"at,omitzero"`
	Seconds *float64  `json:"seconds,omitempty"`
	// Deadline is when its tolerations make it due; later than At only never, earlier when a
	// budget delays it.
	Deadline time.Time `json:"deadline,omitzero"`
	// Delayed is the budget it waited at: RateLimited or Paused.
	Delayed string `json:"delayed,omitempty"`
	// Reason is the engine's reason for a cancelled or skipped eviction.
	Reason string `json:"reason,omitempty"`
	// AtTheLatest says that At is the latest the eviction can be (explain): a taint that
	// decides it counts from when the controller first saw it, which explain cannot know.
	AtTheLatest bool `json:"atTheLatest,omitempty"`
}

// WhyReport is one NoExecute taint of the node (or device) and the toleration that decides
// it.
type WhyReport struct {
	Device string `json:"device,omitempty"`
	Taint  string `json:"taint"`
	// Toleration is the index, in the pod's tolerations (or the device request's), of the
	// toleration that decides; absent when none tolerates the taint.
	Toleration *int `json:"toleration,omitempty"`
	// Seconds is its tolerationSeconds; absent for forever or for no toleration.
	Seconds *int64 `json:"seconds,omitempty"`
	Forever bool   `json:"forever,omitempty"`
	// Since is where the countdown starts; FromTimeAdded says whether it is the taint's
	// TimeAdded (else: first sight, now).
	Since         time.Time `json:"since,omitzero"`
	FromTimeAdded bool      `json:"fromTimeAdded"`
	// FirstSight (explain) says that the countdown starts when the controller first saw
	// the taint: it has no TimeAdded (as kubectl taint writes it), one in the future, or
	// the controller counts from first sight. Since is then that moment as the controller's
	// own deadline gives it, or zero when explain cannot know it; Deadline is then the
	// latest it can be (the controller saw it now at the latest).
	FirstSight bool      `json:"firstSight,omitempty"`
	Deadline   time.Time `json:"deadline,omitzero"`

	untimed string // explain: why the countdown starts at the controller's first sight
}

// DeepCopyObject returns r, for the printers (which only read it).
func (r *Report) DeepCopyObject() runtime.Object { return r }

// nodeReport makes the report of a what-if about nodes.
func nodeReport(res *whatif.Result, q question, selector, namespace string) *Report {
	rep := newReport(res.Start, namespace)
	on, many := "node "+strings.Join(q.nodes, ", node "), len(q.nodes) > 1
	if selector != "" {
		on, many = fmt.Sprintf("the %s selected by -l %s", plural(len(res.Nodes), "node"), selector), len(res.Nodes) > 1
	}
	rep.Question = fmt.Sprintf("%s %s %s", on, verb(q.specs, many), specsString(q.specs))
	for _, n := range res.Nodes {
		rep.Changes = append(rep.Changes, Changed{Node: n.Name, Taints: n.Spec.Taints})
	}
	hadBefore := res.Before != nil
	rep.Pods = make([]PodOutcome, 0, len(res.Pods))
	for _, pf := range res.Pods {
		po := PodOutcome{Namespace: pf.Pod.Namespace, Name: pf.Pod.Name, Node: pf.Pod.Spec.NodeName, Zone: pf.Zone,
			Owner: owner(pf.Pod), After: outcome(pf.After, res.Start)}
		if hadBefore && pf.Changed() {
			b := outcome(pf.Before, res.Start)
			po.Before = &b
		}
		for _, m := range pf.Why {
			po.Why = append(po.Why, whyReport(m, ""))
		}
		po.When, po.Reason = describe(pf.Pod, pf.Before, pf.After, pf.Why, res.Start)
		rep.Pods = append(rep.Pods, po)
	}
	rep.Summary = summaryOf(res.Summary(), rep.Pods)
	return rep
}

// summaryOf is the report's summary of s, with the refusals of pods.
func summaryOf(s whatif.Summary, pods []PodOutcome) Summary {
	out := Summary{Text: s.String(), Pods: s.Pods, Now: s.Now, Later: s.Later, LastSeconds: s.Last.Seconds(),
		Forever: s.Forever, Held: s.Held, Unconfirmed: s.Unconfirmed, Cancelled: s.Cancelled, Leaving: s.Leaving, Unchanged: s.Unchanged}
	for _, p := range pods {
		if p.RefusedBy != "" {
			out.Refused++
		}
	}
	return out
}

func newReport(start time.Time, namespace string) *Report {
	return &Report{TypeMeta: metav1.TypeMeta{APIVersion: reportVersion.String(), Kind: "WhatIf"}, Start: start, Namespace: namespace}
}

// verb is "gets" for additions only, "loses" for removals only, "changes:" otherwise; "get"
// and "lose" for many.
func verb(specs []taintSpec, many bool) string {
	adds, removes := 0, 0
	for _, s := range specs {
		if s.remove {
			removes++
		} else {
			adds++
		}
	}
	switch {
	case removes == 0 && many:
		return "get"
	case removes == 0:
		return "gets"
	case adds == 0 && many:
		return "lose"
	case adds == 0:
		return "loses"
	}
	return "changes:"
}

// outcome turns a fate into its report.
func outcome(f whatif.Fate, start time.Time) Outcome {
	o := Outcome{Verdict: string(f.Verdict), Delayed: string(f.Delayed), Reason: string(f.Reason)}
	if !f.At.IsZero() {
		secs := f.At.Sub(start).Seconds()
		o.At, o.Seconds = f.At, &secs
	}
	o.Deadline = f.Deadline
	return o
}

func whyReport(m whatif.Match, device string) WhyReport {
	w := WhyReport{Device: device, Taint: taintString(m.Taint), Forever: m.Forever, Since: m.Since, FromTimeAdded: m.FromTimeAdded}
	if m.Toleration != nil {
		i := m.Index
		w.Toleration = &i
		if !m.Forever {
			w.Seconds = m.Toleration.TolerationSeconds
		}
	}
	if !m.Forever {
		w.Deadline = m.Deadline
	}
	return w
}

// owner returns the pod's controller as KIND/NAME, or "".
func owner(p *v1.Pod) string {
	if ref := metav1.GetControllerOf(p); ref != nil {
		return ref.Kind + "/" + ref.Name
	}
	return ""
}

// describe returns the When column and the reason of a pod's what-if.
func describe(p *v1.Pod, before, after whatif.Fate, why []whatif.Match, start time.Time) (when, reason string) {
	if after.Verdict == whatif.Leaving {
		if r := eviction.LeavingReason(p); r == eviction.ReasonPodTerminating {
			return "leaving", "already being deleted: the controller never evicts it"
		}
		return "leaving", fmt.Sprintf("has finished (%s): the controller never evicts it", p.Status.Phase)
	}
	m, decisive := decisiveMatch(why)
	switch after.Verdict {
	case whatif.Stays:
		switch {
		case before.Verdict == whatif.Evicted || before.Verdict == whatif.Held || before.Verdict == whatif.Pending:
			was := "it was due " + relative(before.At, start)
			if len(why) == 0 {
				return "cancelled", was + "; no NoExecute taint is left"
			}
			return "cancelled", was + "; " + foreverText(why)
		case len(why) == 0:
			return "never", "no NoExecute taint"
		}
		return "never", foreverText(why)
	case whatif.Held:
		holds := "; the brake holds it while so many nodes carry the taint"
		if after.Delayed == engine.ReasonUnconfirmed {
			holds = "; held until an operator confirms the taint (annotation " + eviction.ConfirmAnnotation + "=KEY on the node): it would evict too many pods"
		}
		return "held", "due " + relative(after.At, start) + ", " + whyText(m, decisive, start) + holds
	}
	when = relative(after.At, start)
	reason = whyText(m, decisive, start)
	if name := budgetName[after.Delayed]; name != "" {
		reason += fmt.Sprintf("; due %s, it waits for %s", relative(after.Deadline, start), name)
	} else if after.Delayed == engine.ReasonPaused {
		reason += "; the brake held it"
	}
	if after.Verdict == whatif.Pending {
		reason += " (not simulated that far)"
	}
	return when, reason
}

// budgetName names the budgets that delay an eviction, by the engine's reason.
var budgetName = map[engine.Reason]string{
	engine.ReasonRateLimited: "the rate limit", engine.ReasonInFlight: "evictions in flight to end (--in-flight)",
	engine.ReasonNamespaceLimit: "its namespace's window (--namespace-limit)", engine.ReasonOwnerLimit: "its workload's window (--owner-limit)",
	engine.ReasonRecreated: "loop damping (--loop-window)",
}

// relative writes t from start: "now", "+5m0s", or "-10s" for the past; to the second from
// 10 s on, to a tenth of a second below (the slots of a rate limit).
func relative(t, start time.Time) string {
	d := t.Sub(start)
	if d >= 10*time.Second || d <= -10*time.Second {
		d = d.Round(time.Second)
	} else {
		d = d.Round(100 * time.Millisecond)
	}
	switch {
	case d <= 0 && d > -time.Second:
		return "now"
	case d < 0:
		return "-" + (-d).String()
	}
	return "+" + d.String()
}

// decisiveMatch returns the match that makes the pod due earliest: a taint not tolerated,
// else the toleration that runs out first; false when every one is tolerated forever.
func decisiveMatch(why []whatif.Match) (whatif.Match, bool) {
	var best whatif.Match
	found := false
	for _, m := range why {
		if m.Forever {
			continue
		}
		if !found || m.Toleration == nil && best.Toleration != nil || (m.Toleration == nil) == (best.Toleration == nil) && m.Deadline.Before(best.Deadline) {
			best, found = m, true
		}
	}
	return best, found
}

func whyText(m whatif.Match, found bool, start time.Time) string {
	if !found {
		return "no NoExecute taint decides it"
	}
	t := taintString(m.Taint)
	if m.Toleration == nil {
		return "does not tolerate " + t
	}
	secs := int64(0)
	if m.Toleration.TolerationSeconds != nil {
		secs = *m.Toleration.TolerationSeconds
	}
	from := "from now (first sight)"
	switch {
	case m.FromTimeAdded && m.Since.Equal(start):
		from = "from now"
	case m.FromTimeAdded:
		from = "from its TimeAdded " + m.Since.UTC().Format(time.RFC3339)
		if d := start.Sub(m.Since); d >= time.Second {
			from += fmt.Sprintf(" (%s ago)", d.Round(time.Second))
		}
	}
	return fmt.Sprintf("tolerates %s for %ds (tolerations[%d]), %s", t, secs, m.Index, from)
}

// foreverText says that every NoExecute taint is tolerated forever.
func foreverText(why []whatif.Match) string {
	if len(why) == 1 {
		return fmt.Sprintf("tolerates %s forever (tolerations[%d])", taintString(why[0].Taint), why[0].Index)
	}
	var ts []string
	for _, m := range why {
		ts = append(ts, taintString(m.Taint))
	}
	return "tolerates " + strings.Join(ts, ", ") + " forever"
}

// class is the column of the group tables a pod counts in.
func class(p PodOutcome) string {
	switch p.When {
	case "now", "never", "held", "leaving", "cancelled":
		return p.When
	}
	return "later"
}

// groups returns the totals by each of by, then the grand total.
func groups(pods []PodOutcome, by []string) []Group {
	var out []Group
	for _, b := range append(slices.Clone(by), "all") {
		m := map[string]*Group{}
		for _, p := range pods {
			name := "all"
			switch b {
			case "namespace":
				name = p.Namespace
			case "node":
				name = cmp.Or(p.Node, p.Device)
			case "zone":
				name = p.Zone
			case "owner":
				name = cmp.Or(p.Owner, "(none)")
			}
			g := m[name]
			if g == nil {
				g = &Group{By: b, Name: name}
				m[name] = g
			}
			g.Pods++
			switch class(p) {
			case "now":
				g.Now++
			case "later":
				g.Later++
			case "never":
				g.Never++
			case "held":
				g.Held++
			case "leaving":
				g.Leaving++
			case "cancelled":
				g.Cancelled++
			}
			if p.RefusedBy != "" {
				g.Refused++
			}
		}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			out = append(out, *m[name])
		}
	}
	return out
}

// plural returns "1 node" or "n nodes".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
