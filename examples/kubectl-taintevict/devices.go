package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/taintevict/taintevict/clientgo/device"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/whatif"
	"github.com/taintevict/taintevict/tolerations"
)

// whatIfRule is the name of the DeviceTaintRule --device stands for.
const whatIfRule = "kubectl-taintevict-what-if"

// runDevices answers a what-if about DRA devices: a DeviceTaintRule (-f) or a taint on one
// device (--device), through the pods' ResourceClaims, as the controller's device side
// (-controllers=device) evicts.
func (w *whatIf) runDevices(ctx context.Context, q question) error {
	switch {
	case w.file != "" && w.device != "":
		return usageError("give -f RULE.yaml or --device, not both")
	case len(q.nodes) > 0 || w.selector != "":
		return usageError("a what-if is about nodes (node/NAME, -l) or about devices (-f, --device), not both")
	}
	rule, err := w.rule(q)
	if err != nil {
		return err
	}
	engineOpts, err := w.budgets.options()
	if err != nil {
		return err
	}
	engineOpts.Tolerations.Rules = tolerations.DeviceRules
	notes := caveats(engineOpts, true)
	engineOpts.Confirm = engine.Confirm{} // the device side's census counts from its informers
	cl, err := w.newClient()
	if err != nil {
		return err
	}
	ns := w.namespace()
	began := time.Now()
	lists, err := listDevices(ctx, cl.kube, ns)
	if err != nil {
		return err
	}
	defer w.logTimings(began, time.Now())
	before, after, ids := lists.sources(cl.kube, rule)
	start := w.now()
	res, err := whatif.Holders[*v1.Pod]{Before: before, After: after, IDs: ids,
		Options: whatif.Options{Start: start, Engine: engineOpts}}.Simulate(ctx)
	if err != nil {
		return simulationError(err)
	}
	rep := deviceReport(res, rule, ns)
	rep.Notes = notes
	if w.budgets.mode == "evict" {
		pdbs, err := listPDBs(ctx, cl.kube, ns)
		if err != nil {
			return err
		}
		refuseDevicePDBs(res, rep, pdbs)
	}
	return w.write(rep)
}

// rule returns the DeviceTaintRule of -f, or the one --device and the taint stand for.
func (w *whatIf) rule(q question) (*resourcev1.DeviceTaintRule, error) {
	if w.file != "" {
		if len(q.specs) > 0 && len(w.removes)+len(q.nodes) > 0 || q.device != "" {
			return nil, usageError("-f takes the rule from the file: give no taint or device on the command line")
		}
		return readRule(w.file, w.streams.In)
	}
	driver, pool, dev, err := splitDevice(w.device)
	if err != nil {
		return nil, err
	}
	if len(q.specs) != 1 || q.specs[0].remove {
		return nil, usageError("--device %s needs one taint to add, KEY[=VALUE]:NoExecute", w.device)
	}
	t := q.specs[0].taint
	return &resourcev1.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: whatIfRule},
		Spec: resourcev1.DeviceTaintRuleSpec{
			DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: &driver, Pool: &pool, Device: &dev},
			Taint:          resourcev1.DeviceTaint{Key: t.Key, Value: t.Value, Effect: resourcev1.DeviceTaintEffect(t.Effect)},
		},
	}, nil
}

// splitDevice splits DRIVER/POOL/DEVICE; the pool may hold slashes.
func splitDevice(s string) (driver, pool, dev string, err error) {
	i, j := strings.IndexByte(s, '/'), strings.LastIndexByte(s, '/')
	if i <= 0 || j <= i+1 || j == len(s)-1 {
		return "", "", "", usageError("--device %q: want DRIVER/POOL/DEVICE", s)
	}
	return s[:i], s[i+1 : j], s[j+1:], nil
}

// readRule reads a DeviceTaintRule from path ("-": in) and checks that it evicts.
func readRule(path string, in io.Reader) (*resourcev1.DeviceTaintRule, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(in)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, usageError("-f: %v", err)
	}
	obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, usageError("-f %s: %v", path, err)
	}
	rule, ok := obj.(*resourcev1.DeviceTaintRule)
	if !ok {
		return nil, usageError("-f %s: want a DeviceTaintRule of resource.k8s.io/v1, got %s", path, gvk.Kind)
	}
	switch e := rule.Spec.Taint.Effect; {
	case e != resourcev1.DeviceTaintEffectNoExecute:
		return nil, usageError("-f %s: effect %q evicts nothing (%v); a rule of effect None counts in its status what NoExecute would evict", path, e, errNotNoExecute)
	case rule.Spec.DeviceSelector == nil:
		return nil, usageError("-f %s: the rule has no deviceSelector, and selects no device", path)
	}
	if rule.Name == "" {
		rule.Name = whatIfRule
	}
	return rule, nil
}

// deviceLists are the objects the device side reads.
type deviceLists struct {
	pods   []*v1.Pod
	claims []*resourcev1.ResourceClaim
	slices []*resourcev1.ResourceSlice
	rules  []*resourcev1.DeviceTaintRule
}

// listDevices lists the pods and ResourceClaims of namespace ("" for all), and every
// ResourceSlice and DeviceTaintRule.
func listDevices(ctx context.Context, c kubernetes.Interface, namespace string) (deviceLists, error) {
	var l deviceLists
	var err error
	if l.pods, err = listPods(ctx, c, namespace); err != nil {
		return l, err
	}
	if l.claims, err = listClaims(ctx, c, namespace); err != nil {
		return l, err
	}
	if l.slices, err = listSlices(ctx, c); err != nil {
		return l, err
	}
	l.rules, err = listRules(ctx, c)
	return l, err
}

// sources returns the device Sources over the lists as they are and with rule created (or
// replacing the rule of its name; nil: no change, the same Source twice), and the devices
// allocated to a claim.
func (l deviceLists) sources(c kubernetes.Interface, rule *resourcev1.DeviceTaintRule) (before, after *device.Source, ids []string) {
	// Informers that are never started: their stores, filled here, with the device side's
	// indexes, are what its Source reads. Nothing is watched.
	inf, _ := device.NewInformers(informers.NewSharedInformerFactory(c, 0)) // a new factory: no index exists yet
	fill(inf.Pods.GetIndexer(), l.pods)
	fill(inf.Claims.GetIndexer(), l.claims)
	fill(inf.Slices.GetIndexer(), l.slices)
	fill(inf.Rules.GetIndexer(), l.rules)
	if rule == nil {
		src := device.NewSource(inf)
		return src, src, inf.Claims.GetIndexer().ListIndexFuncValues(device.DeviceIndex)
	}
	changed := inf
	changed.Rules = informers.NewSharedInformerFactory(c, 0).Resource().V1().DeviceTaintRules().Informer()
	for _, r := range l.rules {
		if r.Name != rule.Name {
			_ = changed.Rules.GetIndexer().Add(r)
		}
	}
	_ = changed.Rules.GetIndexer().Add(rule)
	return device.NewSource(inf), device.NewSource(changed), inf.Claims.GetIndexer().ListIndexFuncValues(device.DeviceIndex)
}

// fill adds objs to store; a store's Add of an object with a name fails only without one.
func fill[T runtime.Object](store cache.Indexer, objs []T) {
	for _, o := range objs {
		_ = store.Add(o)
	}
}

// deviceReport makes the report of a what-if about devices.
func deviceReport(res *whatif.HoldersResult[*v1.Pod], rule *resourcev1.DeviceTaintRule, namespace string) *Report {
	rep := newReport(res.Start, namespace)
	t := rule.Spec.Taint
	taint := taintString(v1.Taint{Key: t.Key, Value: t.Value, Effect: v1.TaintEffect(t.Effect)})
	if rule.Name == whatIfRule {
		s := rule.Spec.DeviceSelector
		rep.Question = fmt.Sprintf("device %s/%s/%s gets %s", *s.Driver, *s.Pool, *s.Device, taint)
	} else {
		rep.Question = fmt.Sprintf("DeviceTaintRule %s (%s, on %s) is created", rule.Name, taint, plural(len(res.Changed), "device"))
	}
	for _, h := range res.Changed {
		rep.Changes = append(rep.Changes, Changed{Device: h.Name, Taints: h.Taints})
	}
	for _, tf := range res.Targets {
		p := tf.Target
		po := PodOutcome{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Device: tf.After.Holder, Owner: owner(p),
			After: outcome(tf.After, res.Start)}
		if tf.Changed() && res.Before != nil {
			b := outcome(tf.Before, res.Start)
			po.Before = &b
		}
		var why []whatif.Match
		for _, b := range tf.Bound {
			for _, m := range b.Why {
				po.Why = append(po.Why, whyReport(m, b.Holder))
			}
			why = append(why, b.Why...)
		}
		if po.Device == "" && len(tf.Bound) > 0 {
			po.Device = tf.Bound[0].Holder
		}
		po.When, po.Reason = describe(p, tf.Before, tf.After, why, res.Start)
		if po.Device != "" && po.After.Verdict != string(whatif.Leaving) {
			po.Reason = "device " + po.Device + ": " + po.Reason
		}
		rep.Pods = append(rep.Pods, po)
	}
	rep.Summary = summaryOf(res.Summary(), nil)
	return rep
}

// refuseDevicePDBs marks in rep the evictions of res that PodDisruptionBudgets would refuse.
func refuseDevicePDBs(res *whatif.HoldersResult[*v1.Pod], rep *Report, pdbs []*policyv1.PodDisruptionBudget) {
	var evicted []*v1.Pod
	var at []int
	for i, tf := range res.Targets {
		if tf.After.Verdict == whatif.Evicted {
			evicted, at = append(evicted, tf.Target), append(at, i)
		}
	}
	refuse(rep, evicted, at, pdbs)
}

// refuse marks in rep, whose pods at[j] are evicted[j], those of the evictions that
// PodDisruptionBudgets would refuse.
func refuse(rep *Report, evicted []*v1.Pod, at []int, pdbs []*policyv1.PodDisruptionBudget) {
	for j, by := range refusals(evicted, pdbs) {
		if by != "" {
			rep.Pods[at[j]].RefusedBy = by
			rep.Pods[at[j]].Reason += "; PodDisruptionBudget " + by + " would refuse the eviction"
			rep.Summary.Refused++
		}
	}
}
