package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/metrics"
	"github.com/taintevict/taintevict/eviction"
)

// The in-memory demonstration: a fake clientset stands for the API server, and the
// controller runs over it exactly as it would over a real one: informers, listers, status
// updates, deletes and Events all go through the clientset. Only the script below, which
// taints a node and waits for the outcome, is particular to the demo.

// Unreachable is the taint the node lifecycle controller puts on a node it has lost
// contact with; with the NoExecute effect it starts the evictions.
const Unreachable = v1.TaintNodeUnreachable

// demoPod is a pod of the demo cluster, with what it tolerates, in words.
type demoPod struct {
	namespace, name, node string
	tolerations           []v1.Toleration
	phase                 v1.PodPhase
	about                 string
}

// demoPods returns the demo's pods. api-1 tolerates the unreachable taint for seconds.
func demoPods(seconds int64) []demoPod {
	forSeconds := func(s int64) []v1.Toleration {
		return []v1.Toleration{{Key: Unreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &s}}
	}
	forever := []v1.Toleration{{Key: Unreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
	gpu := []v1.Toleration{{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
	return []demoPod{
		{"shop", "web-1", "node-1", nil, v1.PodRunning, "nothing"},
		{"batch", "train-1", "node-1", gpu, v1.PodRunning, "nvidia.com/gpu only"},
		{"shop", "api-1", "node-1", forSeconds(seconds), v1.PodRunning, fmt.Sprintf("unreachable for %ds", seconds)},
		{"shop", "cache-1", "node-1", forSeconds(300), v1.PodRunning, "unreachable for 300s"},
		{"logging", "agent-1", "node-1", forever, v1.PodRunning, "unreachable forever, as DaemonSet pods do"},
		{"batch", "report-1", "node-1", nil, v1.PodSucceeded, "nothing; finished"},
		{"shop", "web-2", "node-2", nil, v1.PodRunning, "nothing; on the healthy node"},
	}
}

// demoUID is the UID of a demo pod. The API server gives every object one; the fake
// clientset does not, so the demo does.
func demoUID(namespace, name string) types.UID {
	return types.UID("uid-" + namespace + "-" + name)
}

// NewDemoClientset returns a fake clientset holding the demo cluster: node-1, which the
// demo will taint, and node-2, which stays healthy, with the pods of demoPods.
func NewDemoClientset(seconds int64) *fake.Clientset {
	objs := []runtime.Object{
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "uid-node-1"}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2", UID: "uid-node-2"}},
	}
	for _, p := range demoPods(seconds) {
		objs = append(objs, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name, UID: demoUID(p.namespace, p.name)},
			Spec: v1.PodSpec{
				NodeName:    p.node,
				Tolerations: p.tolerations,
				Containers:  []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			},
			Status: v1.PodStatus{Phase: p.phase},
		})
	}
	client := fake.NewClientset(objs...)
	// The fake clientset takes an Eviction and does nothing; the API server deletes the
	// pod when no PodDisruptionBudget stands in the way, as there is none here.
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ev, ok := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		if !ok || a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		return true, nil, client.Tracker().Delete(v1.SchemeGroupVersion.WithResource("pods"), ev.Namespace, ev.Name)
	})
	return client
}

// DemoOptions configures [RunDemo].
type DemoOptions struct {
	// Seconds is how long api-1 tolerates the unreachable taint.
	Seconds int64
	// Config holds the command line's settings: the mode (dry-run deletes nothing), the
	// workers, leader election (on the fake clientset's Leases) and the metrics address.
	Config config
}

// RunDemo runs the controller over client, a clientset from [NewDemoClientset], and
// drives the scenario: node-1 becomes unreachable; the pods that do not tolerate it are
// evicted at once, api-1 after its toleration; then node-1 comes back, and the pending
// eviction of cache-1 is cancelled. It writes the story to out and returns once the
// outcome is there and the controller has stopped, or when ctx is done.
func RunDemo(ctx context.Context, client *fake.Clientset, out io.Writer, opts DemoOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out = &syncWriter{w: out} // the script and the Observer both write to it

	factory := clientgo.NewFactory(client)
	// An Event informer, for the demo only: the script waits for the Events to reach the
	// API server, and shows them at the end, as `kubectl get events` would.
	eventWake := make(chan struct{}, 1)
	events := factory.Core().V1().Events().Informer()
	if _, err := events.AddEventHandler(wakeHandler(eventWake)); err != nil {
		return err
	}
	copts := opts.Config.controllerOptions()
	copts.Observers = []eviction.Observer{&lineObserver{out: out}}
	copts.WaitIdle = true // the script waits with c.WaitIdle
	reg := prometheus.NewRegistry()
	copts.Metrics = metrics.NewMeter(reg)
	elector, err := opts.Config.elector(client)
	if err != nil {
		return err
	}
	copts.Elector = elector
	c, err := clientgo.NewController(ctx, client, factory, copts)
	if err != nil {
		return err
	}
	if opts.Config.metricsAddr != "" {
		stop, err := listen(ctx, "metrics-addr", opts.Config.metricsAddr, c.Handler(metrics.Handler(reg)), nil)
		if err != nil {
			return err
		}
		defer stop()
	}

	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(ctx) }()
	d := &demo{
		c: c, client: client, out: out, eventWake: eventWake, opts: opts,
		pods:   corelisters.NewPodLister(c.Informers().Pods.GetIndexer()),
		events: corelisters.NewEventLister(events.GetIndexer()),
	}
	err = d.script(ctx)
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = errInterrupted // the signal came while the script waited in a call that takes ctx
	}
	cancel()
	return errors.Join(err, <-stopped)
}

// demo is the state of one run of the script.
type demo struct {
	c      *clientgo.Controller
	client *fake.Clientset
	out    io.Writer
	opts   DemoOptions
	pods   corelisters.PodLister
	events corelisters.EventLister

	eventWake chan struct{} // a change of the Event informer's cache
	marked    []string      // the Events the Manager's decisions will record, in any order
}

func (d *demo) dryRun() bool { return d.opts.Config.mode == clientgo.ModeDryRun }

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, "%s == %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (d *demo) script(ctx context.Context) error {
	select {
	case <-d.c.Synced():
	case <-ctx.Done():
		return errInterrupted
	}
	d.intro()

	d.say("node-1 stops responding: tainting it %s:NoExecute", Unreachable)
	if err := d.setTaint(ctx, true); err != nil {
		return err
	}
	if err := d.evicted(ctx, "shop/web-1", "batch/train-1"); err != nil {
		return err
	}
	for _, p := range d.c.Manager().Pending() {
		d.say("pending: %s at %s (in %s)", p.Target, p.At.Format(time.TimeOnly), time.Until(p.At).Round(100*time.Millisecond))
	}

	d.say("waiting for api-1's %ds toleration to run out", d.opts.Seconds)
	if err := d.evicted(ctx, "shop/api-1"); err != nil {
		return err
	}

	d.say("node-1 is back: removing its taint")
	for _, p := range d.c.Manager().Pending() {
		if p.Delayed == "" { // the Manager reports one the brake holds Skipped: no Event
			d.expect("Cancelling deletion of Pod %s", p.Target)
		}
	}
	if err := d.setTaint(ctx, false); err != nil {
		return err
	}
	if err := d.settle(ctx); err != nil {
		return err
	}

	if err := d.waitEvents(ctx); err != nil {
		return err
	}
	d.summary()
	return nil
}

// settle waits until the Manager has been handed what the clientset holds and has done
// what is due (Controller.WaitIdle), or returns errInterrupted when ctx is done first.
func (d *demo) settle(ctx context.Context) error {
	if err := d.c.WaitIdle(ctx); err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}
	return nil
}

// evicted waits until none of pods is pending: evicted, reported in a dry run, or dropped
// by the Manager. It settles, then sleeps until the earliest of their deadlines (a pod that
// waits for a rate limit has none that Pending tells: it looks again 100 ms later), and
// again. A pod the brake holds is not waited for: the script says so and goes on.
func (d *demo) evicted(ctx context.Context, pods ...string) error {
	for {
		if err := d.settle(ctx); err != nil {
			return err
		}
		var next *eviction.Pending
		var paused []string
		for _, p := range d.c.Manager().Pending() {
			switch {
			case !slices.Contains(pods, p.Target.String()):
			case p.Delayed == eviction.ReasonPaused:
				paused = append(paused, p.Target.String())
			case next == nil:
				next = &p
			}
		}
		if next == nil {
			for _, p := range paused {
				d.say("%s is paused by the brake: going on", p)
				d.expect("Pausing deletion of Pod %s: %s", p, clientgo.PausedMessage)
			}
			return nil
		}
		at := next.At
		if next.Delayed == eviction.ReasonRateLimited {
			at = time.Now().Add(100 * time.Millisecond)
		}
		if err := sleepUntil(ctx, at); err != nil {
			return err
		}
	}
}

func (d *demo) expect(format string, args ...any) {
	d.marked = append(d.marked, fmt.Sprintf(format, args...))
}

// waitEvents waits for kube's Events to reach the API server: the broadcaster writes them
// from its own goroutine. They are those the script expected, and a "Marking for deletion"
// for each pod that is gone. A dry run records none.
func (d *demo) waitEvents(ctx context.Context) error {
	if d.dryRun() {
		return nil
	}
	want := d.marked
	for _, p := range demoPods(d.opts.Seconds) {
		_, err := d.client.CoreV1().Pods(p.namespace).Get(ctx, p.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			want = append(want, fmt.Sprintf("Marking for deletion Pod %s/%s", p.namespace, p.name))
		}
	}
	return until(ctx, d.eventWake, func() bool {
		have := d.eventMessages()
		return !slices.ContainsFunc(want, func(m string) bool { return !slices.Contains(have, m) })
	})
}

// setTaint adds the unreachable taint to node-1, or removes it, through the clientset, as
// the node lifecycle controller would; the informers carry the change to the Manager.
func (d *demo) setTaint(ctx context.Context, on bool) error {
	nodes := d.client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		return err
	}
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.Key == Unreachable })
	if on {
		now := metav1.Now()
		node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: Unreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &now})
	}
	_, err = nodes.Update(ctx, node, metav1.UpdateOptions{})
	return err
}

func (d *demo) intro() {
	d.say("an in-memory cluster: node-1 and node-2, and these pods")
	for _, p := range demoPods(d.opts.Seconds) {
		fmt.Fprintf(d.out, "     %-7s %-16s %-10s tolerates %s\n", p.node, p.namespace+"/"+p.name, p.phase, p.about)
	}
	if d.dryRun() {
		d.say("dry run: the controller reports, and deletes nothing")
	}
}

func (d *demo) eventMessages() []string {
	evs, _ := d.events.List(labels.Everything())
	var out []string
	for _, e := range evs {
		if e.Reason == clientgo.EventReason {
			out = append(out, e.Message)
		}
	}
	return out
}

func (d *demo) summary() {
	pods, _ := d.pods.List(labels.Everything())
	var left []string
	for _, p := range pods {
		left = append(left, p.Spec.NodeName+" "+p.Namespace+"/"+p.Name)
	}
	slices.Sort(left)
	d.say("pods left: %s", strings.Join(left, ", "))
	evs, _ := d.events.List(labels.Everything())
	slices.SortFunc(evs, func(a, b *v1.Event) int { return a.FirstTimestamp.Compare(b.FirstTimestamp.Time) })
	if len(evs) == 0 {
		d.say("no Events recorded")
		return
	}
	d.say("Events recorded (kubectl get events):")
	for _, e := range evs {
		fmt.Fprintf(d.out, "     %-7s %-21s %-14s %s\n", e.Type, e.Reason, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name, e.Message)
	}
}
