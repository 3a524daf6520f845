package main

import (
	"context"
	"fmt"
	"io"
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
already terminating or finished is never evicted: the explanation says so.

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
	x.Verdict = outcome(earliest(nodeFate, devFate), x.Start)
	x.Text = explainText(pod, x, nodeFate, devFate)
	x.Controller = e.controller.ask(ctx, cl, pod)
	return e.write(x)
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
	// Budgets count the other evictions: the brake counts every node, a rate limit is
	// shared with the node's other pods.
	if opts.Brake != (engine.Brake{}) {
		if nodes, err = listNodes(ctx, cl.kube); err != nil {
			return stays, err
		}
	}
	if opts.RateLimit != (engine.Limit{}) || len(opts.TaintRateLimits) > 0 {
		others, err := cl.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
		if err != nil {
			return stays, access{resource: "pods"}.explain(err)
		}
		pods = pods[:0]
		for i := range others.Items {
			pods = append(pods, &others.Items[i])
		}
	}
	res, err := whatif.Nodes(ctx, whatif.Cluster{Nodes: nodes, Pods: whatif.NewIndex(pods)},
		whatif.Change{node.Name: node.Spec.Taints}, whatif.Options{Start: x.Start, Engine: opts})
	if err != nil {
		return stays, simulationError(err)
	}
	for _, pf := range res.Pods {
		if pf.Pod.Namespace == pod.Namespace && pf.Pod.Name == pod.Name {
			for _, m := range pf.Why {
				x.NodeTaints = append(x.NodeTaints, whyReport(m, ""))
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
	opts.Tolerations.Rules = tolerations.DeviceRules
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

// explainText writes the explanation as a short paragraph.
func explainText(pod *v1.Pod, x *Explanation, nodeFate, devFate whatif.Fate) string {
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
	v := earliest(nodeFate, devFate)
	switch v.Verdict {
	case whatif.Evicted, whatif.Pending:
		if !v.At.After(start) {
			fmt.Fprintf(&b, " So the controller evicts it now (it was due %s).", relativeAgo(v.Deadline, start))
		} else {
			fmt.Fprintf(&b, " So the controller evicts it at %s, in %s.", v.At.UTC().Format(time.RFC3339), v.At.Sub(start).Round(time.Second))
		}
		if v.Delayed == engine.ReasonRateLimited {
			fmt.Fprintf(&b, " (It is due at %s; the rate limit delays it.)", v.Deadline.UTC().Format(time.RFC3339))
		}
	case whatif.Held:
		fmt.Fprintf(&b, " It has been due since %s, but the brake holds its eviction while so many nodes carry the taint.", v.At.UTC().Format(time.RFC3339))
	default:
		b.WriteString(" So the controller never evicts it, unless its taints or tolerations change.")
	}
	for _, n := range x.Notes {
		b.WriteString(" (Note: " + n + ".)")
	}
	return b.String()
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
		since := "counted from now (first sight)"
		if w.FromTimeAdded {
			since = fmt.Sprintf("counted from its TimeAdded %s", w.Since.UTC().Format(time.RFC3339))
		}
		switch {
		case w.Toleration == nil:
			b.WriteString(", which no toleration tolerates: due at once")
		case w.Forever:
			fmt.Fprintf(b, ", tolerated forever by %s", tolerationText(pod, w))
		default:
			fmt.Fprintf(b, ", tolerated for %ds by %s, %s: due %s", *w.Seconds, tolerationText(pod, w), since, relativeAgo(w.Deadline, start))
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
