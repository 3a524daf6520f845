package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/whatif"
	"github.com/taintevict/taintevict/tolerations"
)

// whatIf is the what-if command's state: its flags and what it needs to run.
type whatIf struct {
	command

	output        string
	selector      string
	removes       []string
	file          string
	device        string
	allNamespaces bool
	groupBy       []string
	maxPods       int
	budgets       budgetFlags
	timings       bool
	cpuProfile    string
}

const whatIfLong = `Apply hypothetical taints to the live cluster and print what the taintevict controller
would do, as a timeline: which pods go at once, which later and when (and why: the taint, the
toleration that matches it, its tolerationSeconds), which a budget would delay or hold, and
which stay forever; grouped by namespace, node, zone or owner, with totals.

Nothing is changed in the cluster. The command lists the nodes and the pods (and, for
devices, the ResourceClaims, ResourceSlices and DeviceTaintRules) and runs the controller's
own engine on them in dry run, on a simulated clock stepped to each deadline: the verdicts
and the times are the engine's, not a second copy of its rules. Taints already on a node
count from their TimeAdded, as the controller counts them; the new ones from now.

What to change, on nodes:
  node/NAME KEY[=VALUE]:NoExecute    add a taint to one node (several node/NAME may be given)
  -l SELECTOR [TAINT]                add it to every node the label selector selects; the
                                     taint defaults to node.kubernetes.io/unreachable:NoExecute
                                     ("this zone goes unreachable")
  KEY[:EFFECT]- or --remove KEY      remove a taint: which pending evictions are cancelled

On DRA devices, through the pods' ResourceClaims (as the device side of the controller,
-controllers=device, evicts):
  -f rule.yaml                       a DeviceTaintRule (effect NoExecute), as if created
  --device DRIVER/POOL/DEVICE TAINT  a taint on one device

Only NoExecute taints evict: another effect is an error, since there is nothing to simulate.

Budgets: by default the controller is simulated without any (its defaults). Give it the
controller's budget flags, with two dashes (--eviction-rate, --taint-rate, --brake-fraction,
--in-flight, --namespace-limit, --owner-limit, --confirm-fraction, ...), to see what they
would delay or hold; where the timeline then cannot be exact, its notes say so. --mode=evict
adds which evictions a PodDisruptionBudget would refuse at that moment.

Namespaces: a taint evicts in every namespace, so the pods of all namespaces are listed
unless -n is given (then only that namespace's pods are listed and shown, and budgets count
only them). -A says all namespaces explicitly.

Deadlines: the countdowns start as the taintevict controller starts them, at each taint's
TimeAdded (--deadline-source=time-added, the default). On a cluster where
kube-controller-manager's own taint-eviction-controller still evicts (it was not turned off
with --controllers=*,-taint-eviction-controller), that controller counts from when it
first sees the taint, again after each of its restarts: the times shown are taintevict's,
not its, unless --deadline-source=observation is given (counted from now).

Exit codes: 0 when the what-if was answered (whatever it found); 1 when the cluster could
not answer (unreachable, RBAC forbids a list, a node not found); 2 for a wrong command line.`

const whatIfExample = `  # What would tainting node-7 do?
  kubectl taintevict what-if node/node-7 example.com/down:NoExecute

  # Zone a becomes unreachable, with the controller's zone brake at 55%
  kubectl taintevict what-if -l topology.kubernetes.io/zone=a --brake-zone-fraction=0.55

  # What would untainting node-7 cancel?
  kubectl taintevict what-if node/node-7 example.com/down-

  # A DeviceTaintRule, before creating it; as JSON
  kubectl taintevict what-if -f rule.yaml -o json`

func newWhatIfCommand(streams genericiooptions.IOStreams, config *genericclioptions.ConfigFlags, d deps) *cobra.Command {
	w := &whatIf{command: newCommand(streams, config, d)}
	cmd := &cobra.Command{
		Use:     "what-if (node/NAME... | -l SELECTOR | -f RULE.yaml | --device DRIVER/POOL/DEVICE) [KEY[=VALUE]:NoExecute | KEY[:EFFECT]-]...",
		Short:   "Print what hypothetical taints would evict, when and why, without changing anything",
		Long:    whatIfLong,
		Example: whatIfExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			return w.profiled(func() error { return w.run(cmd.Context(), args) })
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&w.output, "output", "o", "", "output format: table (the default), json or yaml")
	fs.StringVarP(&w.selector, "selector", "l", "", "the nodes to taint, by label selector (e.g. topology.kubernetes.io/zone=a)")
	fs.StringArrayVar(&w.removes, "remove", nil, "remove the taints with this KEY (or KEY:EFFECT) instead of adding one; repeatable")
	fs.StringVarP(&w.file, "filename", "f", "", "a DeviceTaintRule to simulate, as YAML or JSON (\"-\": standard input)")
	fs.StringVar(&w.device, "device", "", "a device to taint, DRIVER/POOL/DEVICE, with the taint as an argument")
	fs.BoolVarP(&w.allNamespaces, "all-namespaces", "A", false, "list and show the pods of all namespaces (the default: a taint evicts in every namespace)")
	fs.StringSliceVar(&w.groupBy, "group-by", []string{"namespace"}, "group the totals by namespace, node, zone or owner (several: comma-separated)")
	fs.IntVar(&w.maxPods, "max-pods", 100, "list the pods the change concerns when there are at most this many (-1: always; 0: never); the totals are always printed")
	w.budgets.define(fs, true)
	fs.BoolVar(&w.timings, "timings", false, "write to standard error how long the lists, the simulation and the output took")
	_ = fs.MarkHidden("timings")
	fs.StringVar(&w.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the command to this file")
	_ = fs.MarkHidden("cpuprofile")
	return cmd
}

// profiled runs f, with --cpuprofile under a CPU profile written to its file.
func (w *whatIf) profiled(f func() error) (err error) {
	if w.cpuProfile == "" {
		return f()
	}
	out, err := os.Create(w.cpuProfile)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		return errors.Join(fmt.Errorf("--cpuprofile: %w", err), out.Close())
	}
	defer func() {
		pprof.StopCPUProfile()
		err = errors.Join(err, out.Close())
	}()
	return f()
}

// run answers the what-if of args.
func (w *whatIf) run(ctx context.Context, args []string) error {
	if err := w.checkOutput(); err != nil {
		return err
	}
	if len(args) == 0 && w.selector == "" && w.file == "" && w.device == "" {
		return usageError("what-if needs node/NAME, -l SELECTOR, -f RULE.yaml or --device DRIVER/POOL/DEVICE (see --help)")
	}
	q, err := parseQuestion(args, w.removes)
	if err != nil {
		return err
	}
	if w.file != "" || w.device != "" {
		return w.runDevices(ctx, q)
	}
	if q.device != "" {
		return usageError("a DRIVER/POOL/DEVICE needs --device")
	}
	if len(q.nodes) == 0 && w.selector == "" {
		return usageError("what-if needs node/NAME, -l SELECTOR, -f RULE.yaml or --device DRIVER/POOL/DEVICE (see --help)")
	}
	if len(q.specs) == 0 {
		if w.selector == "" {
			return usageError("give a taint to add, KEY[=VALUE]:NoExecute, or one to remove, KEY- or --remove KEY")
		}
		q.specs = []taintSpec{{taint: defaultTaint}}
	}
	engineOpts, err := w.budgets.options()
	if err != nil {
		return err
	}
	cl, err := w.newClient()
	if err != nil {
		return err
	}
	began := time.Now()
	nodes, err := listNodes(ctx, cl.kube)
	if err != nil {
		return err
	}
	if _, err := w.change(nodes, q); err != nil {
		return err // before listing the pods: a node not found, say
	}
	ns := w.namespace()
	pods, err := listPods(ctx, cl.kube, ns)
	if err != nil {
		return err
	}
	var pdbs []*policyv1.PodDisruptionBudget
	if w.budgets.mode == "evict" {
		if pdbs, err = listPDBs(ctx, cl.kube, ns); err != nil {
			return err
		}
	}
	listed := time.Now()
	defer w.logTimings(began, listed)
	return w.answer(ctx, q, nodes, pods, pdbs, engineOpts)
}

// answer answers the what-if q about nodes from the lists: the simulation, the report and
// its output. It is what the speed target counts: the time after the lists arrive.
func (w *whatIf) answer(ctx context.Context, q question, nodes []*v1.Node, pods []*v1.Pod, pdbs []*policyv1.PodDisruptionBudget, engineOpts engine.Options) error {
	change, err := w.change(nodes, q)
	if err != nil {
		return err
	}
	res, err := whatif.Nodes(ctx, whatif.Cluster{Nodes: nodes, Pods: whatif.NewIndex(pods)}, change, whatif.Options{Start: w.now(), Engine: engineOpts})
	if err != nil {
		return simulationError(err)
	}
	rep := nodeReport(res, q, w.selector, w.namespace())
	rep.Notes = append(caveats(engineOpts, false), untimedNotes(nodes, change, engineOpts.DeadlineSource)...)
	if pdbs != nil {
		var evicted []*v1.Pod
		var at []int
		for i, pf := range res.Pods {
			if pf.After.Verdict == whatif.Evicted {
				evicted, at = append(evicted, pf.Pod), append(at, i)
			}
		}
		refuse(rep, evicted, at, pdbs)
	}
	return w.write(rep)
}

// logTimings writes, with --timings, how long the lists took (from began until listed) and
// the rest, from then until now: the simulation and the output.
func (w *whatIf) logTimings(began, listed time.Time) {
	if w.timings {
		fmt.Fprintf(w.streams.ErrOut, "lists %s, simulation and output %s\n", listed.Sub(began).Round(time.Millisecond), time.Since(listed).Round(time.Millisecond))
	}
}

// checkOutput checks -o before anything is asked of the cluster.
func (w *whatIf) checkOutput() error {
	return checkOutput(w.output, w.print)
}

// namespace is the namespace whose pods to list: "" for all, unless -n was given without -A.
func (w *whatIf) namespace() string {
	if w.allNamespaces || w.config.Namespace == nil {
		return ""
	}
	return *w.config.Namespace
}

// question is what the command line asks: which nodes (or device), and what to change.
type question struct {
	nodes  []string
	device string // DRIVER/POOL/DEVICE given as an argument by mistake
	specs  []taintSpec
}

// defaultTaint is what -l adds when no taint is given: the node lifecycle controller's taint
// of a node that stops reporting.
var defaultTaint = v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}

// parseQuestion reads the arguments: node/NAME targets and taint specs, and the removals of
// --remove.
func parseQuestion(args []string, removes []string) (question, error) {
	var q question
	for _, a := range args {
		kind, name, isRef := strings.Cut(a, "/")
		switch {
		case isRef && (kind == "node" || kind == "nodes" || kind == "no"):
			if name == "" {
				return q, usageError("%q names no node", a)
			}
			q.nodes = append(q.nodes, name)
		case isRef && !strings.ContainsAny(a, ":=") && strings.Count(a, "/") == 2:
			q.device = a
		case isRef && strings.Count(kind, ".") == 0 && !strings.ContainsAny(a, ":="):
			return q, usageError("%q: what-if changes nodes (node/NAME) or devices (--device); for a pod, see kubectl taintevict explain", a)
		default:
			s, err := parseTaintSpec(a)
			if err != nil {
				return q, usageError("%v", err)
			}
			q.specs = append(q.specs, s)
		}
	}
	for _, r := range removes {
		key, effect, _ := strings.Cut(r, ":")
		s, err := parseTaintSpec(key + ":" + effect + "-")
		if effect == "" {
			s, err = parseTaintSpec(key + "-")
		}
		if err != nil {
			return q, usageError("--remove %q: %v", r, err)
		}
		q.specs = append(q.specs, s)
	}
	return q, nil
}

// change returns the taints each node of the question would carry.
func (w *whatIf) change(nodes []*v1.Node, q question) (whatif.Change, error) {
	byName := make(map[string]*v1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	var chosen []*v1.Node
	switch {
	case len(q.nodes) > 0 && w.selector != "":
		return nil, usageError("give node/NAME or -l SELECTOR, not both")
	case w.selector != "":
		sel, err := labels.Parse(w.selector)
		if err != nil {
			return nil, usageError("-l %q: %v", w.selector, err)
		}
		for _, n := range nodes {
			if sel.Matches(labels.Set(n.Labels)) {
				chosen = append(chosen, n)
			}
		}
		if len(chosen) == 0 {
			return nil, &exitError{code: exitCluster, err: fmt.Errorf("no node matches -l %s", w.selector)}
		}
	default:
		for _, name := range q.nodes {
			n := byName[name]
			if n == nil {
				return nil, &exitError{code: exitCluster, err: fmt.Errorf("node %q not found", name)}
			}
			chosen = append(chosen, n)
		}
	}
	change := whatif.Change{}
	var lastErr error
	for _, n := range chosen {
		taints, err := apply(n.Spec.Taints, q.specs)
		switch {
		case err != nil && w.selector == "":
			return nil, &exitError{code: exitCluster, err: fmt.Errorf("node %s: %w", n.Name, err)}
		case err != nil:
			lastErr = err // a selected node without the taint to remove is left as it is
		default:
			change[n.Name] = taints
		}
	}
	if len(change) == 0 {
		return nil, &exitError{code: exitCluster, err: fmt.Errorf("no node selected by -l %s has it: %w", w.selector, lastErr)}
	}
	return change, nil
}

// untimedNotes says of each taint already on a changed node without TimeAdded (or with
// one in the future) that the controller counts it from when it first saw it, before now:
// the what-if, from now, gives the latest it can be.
func untimedNotes(nodes []*v1.Node, change whatif.Change, source engine.DeadlineSource) []string {
	var out []string
	for _, n := range nodes {
		taints, changed := change[n.Name]
		if !changed || source == engine.FromObservation {
			continue
		}
		for _, t := range tolerations.NoExecuteTaints(n.Spec.Taints) {
			if (t.TimeAdded == nil || t.TimeAdded.IsZero()) && slices.ContainsFunc(taints, func(x v1.Taint) bool { return x.MatchTaint(&t) }) {
				out = append(out, fmt.Sprintf("node %s's taint %s has no TimeAdded: the controller counts it from when it first saw it, and this what-if from now, so its evictions are due at the latest as shown", n.Name, taintString(t)))
			}
		}
	}
	return out
}

// simulationError classifies an error of the simulation: invalid budgets are the command
// line's fault.
func simulationError(err error) error {
	if strings.Contains(err.Error(), "engine:") {
		return usageError("the budget flags: %v", err)
	}
	return &exitError{code: exitCluster, err: err}
}

// specsString writes the changes of q: the taints added, KEY[=VALUE]:EFFECT, and those
// removed, KEY[:EFFECT]- as kubectl taint takes them (KEY alone when all are removals).
func specsString(specs []taintSpec) string {
	adds := slices.ContainsFunc(specs, func(s taintSpec) bool { return !s.remove })
	var parts []string
	for _, s := range specs {
		switch {
		case s.remove && adds:
			parts = append(parts, describeRemoval(s.taint)+"-")
		case s.remove:
			parts = append(parts, describeRemoval(s.taint))
		default:
			parts = append(parts, taintString(s.taint))
		}
	}
	return strings.Join(parts, " ")
}

// sortedNames returns the names of change, sorted.
func sortedNames(change whatif.Change) []string {
	var out []string
	for n := range change {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
