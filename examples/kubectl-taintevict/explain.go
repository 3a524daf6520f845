package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/whatif"
	"github.com/taintevict/taintevict/tolerations"
)

// explainer is the explain command's state.
type explainer struct {
	command

	output     string
	controller controllerFlags
	budgets    budgetFlags
}

const explainLong = `Explain what the taintevict controller will do with one pod, and why: which NoExecute taints
apply to it (those of its node, and those of the DRA devices of its ResourceClaims), which
of its tolerations matches each, the deadline and where it counts from (the taint's
TimeAdded, or first sight), and so whether it is evicted now, at a time, or never. A pod
already terminating or finished is never evicted: the explanation says so. A taint without
TimeAdded (as kubectl taint writes it) counts from when the controller first saw it: the
controller's own deadline says when that was; without it, explain gives the latest the
deadline can be.

The verdict and the time come from the controller's engine, run in dry run over the pod's
node and devices as they are now; the explanation of each taint from the same rules.

Then it asks the controller what it holds for the pod (its /debug/pending: the pending
eviction, the budget that holds it, the attempts and the last error), through the API
server's service proxy (the Service of deploy/, by default) or at --controller URL, with the
kubeconfig's bearer token, which the controller reviews as it reviews its /metrics scrapers
(RBAC: get on the non-resource URL /debug/pending). When it cannot, it says why.

Deadlines: the countdowns start as the taintevict controller starts them, at each taint's
TimeAdded (--deadline-source=time-added, the default). On a cluster where
kube-controller-manager's own taint-eviction-controller still evicts (it was not turned off
with --controllers=*,-taint-eviction-controller), that controller counts from when it
first sees the taint, again after each of its restarts: the times shown are taintevict's,
not its, unless --deadline-source=observation is given (counted from now).

Exit codes: 0 when the pod was explained; 1 when the cluster could not answer (the pod not
found, RBAC forbids reading it); 2 for a wrong command line.`

const explainExample = `  # Why is (or isn't) pod web-7 evicted?
  kubectl taintevict explain pod/web-7 -n shop

  # The same as JSON, asking the controller at a port-forward
  kubectl -n taintevict-system port-forward deploy/taintevict-controller 8443 &
  kubectl taintevict explain pod/web-7 -n shop --controller https://localhost:8443 --controller-insecure -o json`

func newExplainCommand(streams genericiooptions.IOStreams, config *genericclioptions.ConfigFlags, d deps) *cobra.Command {
	e := &explainer{command: newCommand(streams, config, d)}
	cmd := &cobra.Command{
		Use:     "explain pod/NAME",
		Short:   "Explain whether, when and why the controller evicts a pod",
		Long:    explainLong,
		Example: explainExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.run(cmd.Context(), args)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&e.output, "output", "o", "", "output format: text (the default, a paragraph), json or yaml")
	e.controller.define(fs)
	e.budgets.define(fs, false)
	return cmd
}

// Explanation is what explain finds, as -o json and -o yaml print it.
type Explanation struct {
	metav1.TypeMeta `json:",inline"`
	Namespace       string    `json:"namespace"`
	Name            string    `json:"name"`
	UID             types.UID `json:"uid"`
	Node            string    `json:"node,omitempty"`
	Zone            string    `json:"zone,omitempty"`
	Start           time.Time `json:"start"`
	// Leaving says why the pod is never evicted when it is already leaving: PodTerminating
	// or PodFinished.
	Leaving string `json:"leaving,omitempty"`
	// NodeTaints are the NoExecute taints of its node, each with the toleration that
	// decides it; DeviceTaints those of the devices of its claims.
	NodeTaints   []WhyReport `json:"nodeTaints,omitempty"`
	DeviceTaints []WhyReport `json:"deviceTaints,omitempty"`
	// Verdict is what the engine does with the pod: the earliest of its node's and its
	// devices' fates.
	Verdict Outcome `json:"verdict"`
	// Text is the explanation as a person reads it.
	Text string `json:"text"`
	// Notes are what could not be looked at (devices, the controller), and why.
	Notes      []string         `json:"notes,omitempty"`
	Controller *ControllerState `json:"controller,omitempty"`
}

// DeepCopyObject returns e, for the printers (which only read it).
func (e *Explanation) DeepCopyObject() runtime.Object { return e }

func (e *explainer) run(ctx context.Context, args []string) error {
	if e.output != "text" {
		if err := checkOutput(e.output, e.print); err != nil {
			return usageError("-o %q: want text, json or yaml", e.output)
		}
	}
	if len(args) != 1 {
		return usageError("explain takes one pod: explain pod/NAME")
	}
	name, err := podName(args[0])
	if err != nil {
		return err
	}
	opts, err := e.budgets.options()
	if err != nil {
		return err
	}
	cl, err := e.newClient()
	if err != nil {
		return err
	}
	ns := cl.namespace
	if e.config.Namespace != nil && *e.config.Namespace != "" {
		ns = *e.config.Namespace
	}
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	pod, err := cl.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return getError(err, "pod", "pods", ns, name)
	}
	x := &Explanation{TypeMeta: metav1.TypeMeta{APIVersion: reportVersion.String(), Kind: "Explanation"},
		Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Node: pod.Spec.NodeName, Start: e.now()}
	if r := eviction.LeavingReason(pod); r != "" {
		x.Leaving = string(r)
	}
	nodeFate, err := e.nodeSide(ctx, cl, pod, x, opts)
	if err != nil {
		return err
	}
	devFate := e.deviceSide(ctx, cl, pod, x, opts)
	x.Controller = e.controller.ask(ctx, cl, pod, x.Start)
	latest := firstSight(x, &nodeFate)
	v := earliest(nodeFate, devFate)
	x.Verdict = outcome(v, x.Start)
	x.Verdict.AtTheLatest = latest && v == nodeFate
	x.Text = explainText(pod, x, v)
	return e.write(x)
}

// firstSight marks the node taints whose countdown starts when the controller first saw
// them, which explain cannot see (the simulation counts them from now). When the
// controller answered with its deadline for the pod, that is the node side's fate, and the
// first sight of the one such taint that makes it due follows from it. Otherwise the fate
// is the latest the eviction can be, and firstSight reports whether such a taint decides
// it.
func firstSight(x *Explanation, fate *whatif.Fate) bool {
	var untimed []int
	due := fate.Verdict == whatif.Evicted || fate.Verdict == whatif.Pending || fate.Verdict == whatif.Held
	for i, w := range x.NodeTaints {
		if w.untimed != "" {
			x.NodeTaints[i].FirstSight, x.NodeTaints[i].Since = true, time.Time{}
			untimed = append(untimed, i)
		}
	}
	if len(untimed) == 0 || !due {
		return false
	}
	at := x.Controller.nodeDeadline(x.Node)
	if at == nil {
		return slices.ContainsFunc(untimed, func(i int) bool { return x.NodeTaints[i].Deadline.Equal(fate.Deadline) })
	}
	fate.At, fate.Deadline = *at, *at
	if fate.Verdict == whatif.Held && at.After(x.Start) {
		fate.Verdict = whatif.Pending
	}
	if len(untimed) == 1 {
		w := &x.NodeTaints[untimed[0]]
		if earlier := slices.ContainsFunc(x.NodeTaints, func(o WhyReport) bool {
			return !o.FirstSight && !o.Forever && !o.Deadline.After(*at)
		}); !earlier {
			w.Since, w.Deadline = at.Add(-time.Duration(*w.Seconds)*time.Second), *at
		}
	}
	return false
}

// podName returns the name of pod/NAME (or pods/NAME, po/NAME, or NAME alone).
func podName(arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		return arg, nil
	}
	if kind != "pod" && kind != "pods" && kind != "po" {
		return "", usageError("explain explains pods: want pod/NAME, got %q", arg)
	}
	if name == "" || strings.Contains(name, "/") {
		return "", usageError("%q names no pod", arg)
	}
	return name, nil
}

// getError turns an error of a GET of the object kind ns/name into one line, with the RBAC
// verb when refused.
func getError(err error, kind, resource, ns, name string) error {
	what := kind + " " + name
	where := "cluster-wide"
	if ns != "" {
		what, where = fmt.Sprintf("%s %s/%s", kind, ns, name), "in namespace "+ns
	}
	switch {
	case apierrors.IsNotFound(err):
		return &exitError{code: exitCluster, err: fmt.Errorf("%s not found", what)}
	case apierrors.IsForbidden(err):
		return &exitError{code: exitCluster, err: fmt.Errorf("forbidden: the command needs RBAC to allow get %s %s: %s", resource, where, apiMessage(err))}
	}
	return &exitError{code: exitCluster, err: fmt.Errorf("get %s: %w", what, err)}
}

// nodeSide simulates the pod on its node, as it is, and fills x with the node's taints. It
// returns the pod's fate there (Stays for a pod on no node, or on a node that is gone).
func (e *explainer) nodeSide(ctx context.Context, cl *clients, pod *v1.Pod, x *Explanation, opts engine.Options) (whatif.Fate, error) {
	stays := whatif.Fate{Verdict: whatif.Stays}
	if pod.Spec.NodeName == "" {
		return stays, nil
	}
	node, err := cl.kube.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		x.Notes = append(x.Notes, fmt.Sprintf("its node %s does not exist: no node taint applies", pod.Spec.NodeName))
		return stays, nil
	}
	if err != nil {
		return stays, getError(err, "node", "nodes", "", pod.Spec.NodeName)
	}
	x.Zone = node.Labels[v1.LabelTopologyZone]
	nodes, pods := []*v1.Node{node}, []*v1.Pod{pod}
	// Budgets count the other evictions, of every node: the brake and Confirm count the
	// nodes and the pods, the rates, InFlight and the windows are shared with them.
	if opts.Brake != (engine.Brake{}) || budgeted(opts) {
		if nodes, err = listNodes(ctx, cl.kube); err != nil {
			return stays, err
		}
	}
	if budgeted(opts) {
		if pods, err = listPods(ctx, cl.kube, ""); err != nil {
			return stays, err
		}
		x.Notes = append(x.Notes, caveats(opts, false)...)
	}
	res, err := whatif.Nodes(ctx, whatif.Cluster{Nodes: nodes, Pods: whatif.NewIndex(pods)},
		whatif.Change{node.Name: node.Spec.Taints}, whatif.Options{Start: x.Start, Engine: opts})
	if err != nil {
		return stays, simulationError(err)
	}
	for _, pf := range res.Pods {
		if pf.Pod.Namespace == pod.Namespace && pf.Pod.Name == pod.Name {
			for _, m := range pf.Why {
				w := whyReport(m, "")
				w.untimed = untimedWhy(m, x.Start, opts.DeadlineSource)
				x.NodeTaints = append(x.NodeTaints, w)
			}
			return pf.After, nil
		}
	}
	return stays, nil
}

// deviceSide simulates the pod on the devices of its claims, as they are, and fills x with
// their taints. It returns the pod's fate there; what it cannot read it notes in x, and it
// goes on without the devices.
func (e *explainer) deviceSide(ctx context.Context, cl *clients, pod *v1.Pod, x *Explanation, opts engine.Options) whatif.Fate {
	stays := whatif.Fate{Verdict: whatif.Stays}
	if len(pod.Spec.ResourceClaims) == 0 && pod.Status.ExtendedResourceClaimStatus == nil {
		return stays
	}
	var l deviceLists
	var err error
	l.pods = []*v1.Pod{pod}
	if l.claims, err = listClaims(ctx, cl.kube, pod.Namespace); err == nil {
		if l.slices, err = listSlices(ctx, cl.kube); err == nil {
			l.rules, err = listRules(ctx, cl.kube)
		}
	}
	if err != nil {
		x.Notes = append(x.Notes, "devices not looked at: "+err.Error())
		return stays
	}
	src, _, _ := l.sources(cl.kube, nil)
	opts.Tolerations.Rules, opts.Confirm = tolerations.DeviceRules, engine.Confirm{} // the device side's census is its own
	bound, err := whatif.WhyBound(src, pod, x.Start, opts)
	if err != nil {
		x.Notes = append(x.Notes, "devices not looked at: "+err.Error())
		return stays
	}
	var holders []engine.Holder
	for _, b := range bound {
		for _, m := range b.Why {
			x.DeviceTaints = append(x.DeviceTaints, whyReport(m, b.Holder))
		}
		h, _, _ := src.Holder(b.Holder)
		holders = append(holders, h)
	}
	if len(holders) == 0 {
		return stays
	}
	tl, err := whatif.SimulateHolders(ctx, src, holders, whatif.Options{Start: x.Start, Engine: opts})
	if err != nil {
		x.Notes = append(x.Notes, "devices not simulated: "+err.Error())
		return stays
	}
	if f, ok := tl.Fates[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}]; ok {
		return f
	}
	return stays
}

// budgeted reports whether opts sets a budget other than the brake, which counts other
// evictions than the pod's.
func budgeted(opts engine.Options) bool {
	return opts.RateLimit != (engine.Limit{}) || len(opts.TaintRateLimits) > 0 || opts.InFlight != (engine.InFlight{}) ||
		opts.NamespaceLimit != (engine.Window{}) || opts.OwnerLimit != (engine.Window{}) || opts.LoopDamping.Window > 0 || opts.Confirm.Fraction > 0
}

// earliest returns the fate that evicts first: the node side and the device side are two
// controllers, and the pod goes at the first of them.
func earliest(a, b whatif.Fate) whatif.Fate {
	rank := func(f whatif.Fate) int {
		switch f.Verdict {
		case whatif.Evicted, whatif.Pending:
			return 0
		case whatif.Held:
			return 1
		case whatif.Leaving:
			return 2
		}
		return 3
	}
	switch ra, rb := rank(a), rank(b); {
	case ra != rb && ra < rb:
		return a
	case ra != rb:
		return b
	case ra == 0 && b.At.Before(a.At):
		return b
	}
	return a
}

// untimedWhy says why m's countdown starts when the controller first saw its taint, "" when
// it does not, or when that changes nothing (tolerated forever, or for no time).
func untimedWhy(m whatif.Match, start time.Time, source engine.DeadlineSource) string {
	switch {
	case m.FromTimeAdded || m.Toleration == nil || m.Forever || !m.Deadline.After(start):
		return ""
	case source == engine.FromObservation:
		return "it counts every taint from first sight, -deadline-source=observation"
	case m.Taint.TimeAdded == nil || m.Taint.TimeAdded.IsZero():
		return "it has no TimeAdded, as kubectl taint writes it"
	}
	return "its TimeAdded is in the future"
}

// explainText writes the explanation, whose verdict is v, as a short paragraph.
func explainText(pod *v1.Pod, x *Explanation, v whatif.Fate) string {
	var b strings.Builder
	start := x.Start
	fmt.Fprintf(&b, "Pod %s/%s", pod.Namespace, pod.Name)
	switch {
	case pod.Spec.NodeName == "":
		b.WriteString(" is not scheduled to a node: no node taint applies to it.")
	case x.Zone != "":
		fmt.Fprintf(&b, " runs on node %s (zone %s).", pod.Spec.NodeName, x.Zone)
	default:
		fmt.Fprintf(&b, " runs on node %s.", pod.Spec.NodeName)
	}
	switch x.Leaving {
	case string(eviction.ReasonPodTerminating):
		fmt.Fprintf(&b, " It is already being deleted (since %s): the controller never evicts a pod that is leaving, so nothing will happen.", pod.DeletionTimestamp.UTC().Format(time.RFC3339))
		return b.String()
	case string(eviction.ReasonPodFinished):
		fmt.Fprintf(&b, " It has finished (%s): the controller never evicts a pod that is done, so nothing will happen.", pod.Status.Phase)
		return b.String()
	}
	if pod.Spec.NodeName != "" {
		switch len(x.NodeTaints) {
		case 0:
			b.WriteString(" Its node carries no NoExecute taint.")
		case 1:
			b.WriteString(" Its node carries 1 NoExecute taint: ")
		default:
			fmt.Fprintf(&b, " Its node carries %d NoExecute taints: ", len(x.NodeTaints))
		}
		writeTaints(&b, x.NodeTaints, pod, start)
	}
	if len(x.DeviceTaints) > 0 {
		b.WriteString(" The devices of its ResourceClaims carry NoExecute taints: ")
		writeTaints(&b, x.DeviceTaints, pod, start)
	}
	writeVerdict(&b, x, v, start)
	for _, n := range x.Notes {
		b.WriteString(" (Note: " + n + ".)")
	}
	return b.String()
}

// writeVerdict writes what the controller does with the pod, whose fate is v.
func writeVerdict(b *strings.Builder, x *Explanation, v whatif.Fate, start time.Time) {
	switch v.Verdict {
	case whatif.Evicted, whatif.Pending:
		switch {
		case !v.At.After(start):
			fmt.Fprintf(b, " So the controller evicts it now (it was due %s).", relativeAgo(v.Deadline, start))
		case x.Verdict.AtTheLatest:
			fmt.Fprintf(b, " So the controller evicts it by %s at the latest, in %s.", v.At.UTC().Format(time.RFC3339), v.At.Sub(start).Round(time.Second))
		default:
			fmt.Fprintf(b, " So the controller evicts it at %s, in %s.", v.At.UTC().Format(time.RFC3339), v.At.Sub(start).Round(time.Second))
		}
		if name := budgetName[v.Delayed]; name != "" {
			fmt.Fprintf(b, " (It is due at %s; it waits for %s.)", v.Deadline.UTC().Format(time.RFC3339), name)
		}
	case whatif.Held:
		holds := "the brake holds its eviction while so many nodes carry the taint"
		if v.Delayed == engine.ReasonUnconfirmed {
			holds = "the controller holds its eviction until an operator confirms the taint (annotation " + eviction.ConfirmAnnotation + "=KEY on the node): it would evict too many pods at once"
		}
		fmt.Fprintf(b, " It has been due since %s, but %s.", v.At.UTC().Format(time.RFC3339), holds)
	default:
		b.WriteString(" So the controller never evicts it, unless its taints or tolerations change.")
	}
}

// writeTaints writes each taint and what the pod's tolerations make of it.
func writeTaints(b *strings.Builder, taints []WhyReport, pod *v1.Pod, start time.Time) {
	for i, w := range taints {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(w.Taint)
		if w.Device != "" {
			b.WriteString(" on device " + w.Device)
		}
		since, due := "counted from now (first sight)", relativeAgo(w.Deadline, start)
		switch {
		case w.FromTimeAdded:
			since = fmt.Sprintf("counted from its TimeAdded %s", w.Since.UTC().Format(time.RFC3339))
		case w.FirstSight && !w.Since.IsZero():
			since = fmt.Sprintf("counted from when the controller first saw it (%s), at %s as its deadline says", w.untimed, w.Since.UTC().Format(time.RFC3339))
		case w.FirstSight:
			since = fmt.Sprintf("counted from when the controller first saw it (%s), which explain cannot know", w.untimed)
			due = fmt.Sprintf("by %s at the latest (in %s), unless the controller restarts first (it then counts from its restart)", w.Deadline.UTC().Format(time.RFC3339), w.Deadline.Sub(start).Round(time.Second))
		}
		switch {
		case w.Toleration == nil:
			b.WriteString(", which no toleration tolerates: due at once")
		case w.Forever:
			fmt.Fprintf(b, ", tolerated forever by %s", tolerationText(pod, w))
		default:
			fmt.Fprintf(b, ", tolerated for %ds by %s, %s: due %s", *w.Seconds, tolerationText(pod, w), since, due)
		}
	}
	b.WriteString(".")
}

// tolerationText names the toleration of w: spec.tolerations[i] for the node's, with what
// it says; the allocation's for a device's.
func tolerationText(pod *v1.Pod, w WhyReport) string {
	i := *w.Toleration
	if w.Device != "" {
		return fmt.Sprintf("toleration %d of its claim's allocation", i)
	}
	if i < 0 || i >= len(pod.Spec.Tolerations) {
		return fmt.Sprintf("spec.tolerations[%d]", i)
	}
	t := pod.Spec.Tolerations[i]
	parts := []string{cmpOr(t.Key, "any key"), cmpOr(string(t.Operator), string(v1.TolerationOpEqual))}
	if t.Value != "" {
		parts = append(parts, t.Value)
	}
	parts = append(parts, cmpOr(string(t.Effect), "any effect"))
	return fmt.Sprintf("spec.tolerations[%d] (%s)", i, strings.Join(parts, " "))
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// relativeAgo writes t from start in words: "at 12:05:00Z (in 5m0s)", "5m0s ago", "now".
func relativeAgo(t, start time.Time) string {
	d := t.Sub(start).Round(time.Second)
	switch {
	case d == 0:
		return "now"
	case d < 0:
		return fmt.Sprintf("at %s (%s ago)", t.UTC().Format(time.RFC3339), -d)
	}
	return fmt.Sprintf("at %s (in %s)", t.UTC().Format(time.RFC3339), d)
}

// write prints x: its text with the controller's answer, or with the printer of -o.
func (e *explainer) write(x *Explanation) error {
	if e.output != "" && e.output != "table" && e.output != "text" {
		p, err := e.print.ToPrinter(e.output)
		if err != nil {
			return usageError("-o %q: want text, json or yaml", e.output)
		}
		return p.PrintObj(x, e.streams.Out)
	}
	writeWrapped(e.streams.Out, x.Text)
	if x.Controller != nil {
		fmt.Fprintln(e.streams.Out)
		writeWrapped(e.streams.Out, x.Controller.Text)
	}
	return nil
}

// writeWrapped writes text wrapped at 100 columns.
func writeWrapped(out io.Writer, text string) {
	line := 0
	for i, w := range strings.Fields(text) {
		if i > 0 && line+1+len(w) > 100 {
			fmt.Fprintln(out)
			line = 0
		} else if i > 0 {
			fmt.Fprint(out, " ")
			line++
		}
		fmt.Fprint(out, w)
		line += len(w)
	}
	fmt.Fprintln(out)
}
