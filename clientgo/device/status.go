package device

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	resourceac "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/timedqueue"
	"github.com/taintevict/taintevict/tolerations"
)

// The reasons of the EvictionInProgress condition on a DeviceTaintRule: kube's, and
// ReasonEvictionPaused, ours, for a rule that [engine.Options.Confirm] holds.
//
// A [Controller] writes the condition with kube's reasons and messages, at kube's times:
// at once for a new rule, a changed spec, and every rule when it starts to lead, counted
// before the engine hears of the change; a status period ([Options.StatusPeriod]) after
// each eviction it counts for, and after each change of a pod that the rule makes due or
// of its claims; at once when Confirm starts or stops holding the rule; at most once a
// period for a generation. In [clientgo.ModeDryRun] nothing is written.
const (
	ReasonPodsPendingEviction = "PodsPendingEviction"
	ReasonCompleted           = "Completed"
	ReasonNotStarted          = "NotStarted"
	ReasonNoEffect            = "NoEffect"
	ReasonOtherEffect         = "OtherEffect"
	ReasonEvictionPaused      = "EvictionPaused"
)

// DefaultStatusPeriod is kube's shortest time between two updates of a rule's status
// while its evictions are in progress.
const DefaultStatusPeriod = 10 * time.Second

var deviceRules = tolerations.Options{Rules: tolerations.DeviceRules}

// tally is what taints would evict, in all and per namespace, and the devices they are on.
type tally struct {
	pods, devices int
	namespaces    map[string]int
}

// count tallies the pods that taintsOn(id), a scope's NoExecute taints on device id, would
// evict: kube's pending pods. With taintsOn nil it tallies every pod bound to a device.
func (s *Source) count(taintsOn func(id string) []v1.Taint, now time.Time) tally {
	t := tally{namespaces: map[string]int{}}
	seen := map[types.UID]bool{}
	var d engine.Target
	for _, id := range s.claims.ListIndexFuncValues(DeviceIndex) {
		var taints []v1.Taint
		if taintsOn != nil {
			if taints = taintsOn(id); len(taints) == 0 {
				continue
			}
			claims, _ := s.claims.ByIndex(DeviceIndex, id)
			t.devices += len(claims)
		}
		pods, _ := s.TargetsOn(id)
		for _, pod := range pods {
			if seen[pod.UID] {
				continue
			}
			if s.Describe(pod, &d); d.Leaving != "" {
				continue
			}
			for _, b := range d.Bindings {
				if b.Holder == id && (taintsOn == nil || tolerations.Deadline(taints, b.Tolerations, now, now, deviceRules).Verdict != tolerations.Stay) {
					seen[pod.UID] = true
					t.pods++
					t.namespaces[pod.Namespace]++
					break
				}
			}
		}
	}
	return t
}

// ruleTaints returns rule's taint, as NoExecute (as kube counts), on the devices it selects.
func (s *Source) ruleTaints(rule *resourcev1.DeviceTaintRule) func(string) []v1.Taint {
	taint := tolerations.DeviceTaints([]resourcev1.DeviceTaint{rule.Spec.Taint})
	taint[0].Effect = v1.TaintEffectNoExecute
	return func(id string) []v1.Taint {
		if ruleMatches(rule, id) {
			return taint
		}
		return nil
	}
}

// ruleStatus writes the EvictionInProgress condition of every DeviceTaintRule as kube's
// maybeUpdateRuleStatus does, with server-side apply bound to the rule's UID, at kube's
// times rather than a cadence of our own: an operator reads the same status after
// switching over. Locks: mu guards the maps; it is not held while counting, writing, or
// calling the census.
type ruleStatus struct {
	client kubernetes.Interface
	src    *Source
	census *census // nil without Confirm
	clock  clock.Clock
	period time.Duration
	queue  *timedqueue.Queue[string, struct{}] // by rule name: when to write its condition
	live   atomic.Bool                         // Lead started it: the caches have synced

	mu       sync.Mutex
	evicted  map[types.UID]int64 // by rule: the pods its evictions removed
	inflight map[types.UID]int   // by rule: the deletes under way, whose pods may have left the cache
	counted  map[string]counted  // by rule name: its condition, counted when it changed
	written  map[string]counted  // by rule name: the condition last written, which the cache may not show yet
}

// counted is a rule's condition, counted for the rule of that UID and generation.
type counted struct {
	uid        types.UID
	generation int64
	condition  metav1.Condition
}

func newRuleStatus(client kubernetes.Interface, src *Source, clk clock.Clock, period time.Duration) (r *ruleStatus, err error) {
	r = &ruleStatus{client: client, src: src, clock: clk, period: period, evicted: map[types.UID]int64{},
		inflight: map[types.UID]int{}, counted: map[string]counted{}, written: map[string]counted{}}
	r.queue, err = timedqueue.New(r.write, timedqueue.Options{Clock: clk, Workers: 1})
	return r, err
}

// counting returns d, counting each pod it removes for the rules blamed before the delete
// (after it, the pod may be gone from the cache); their status is due a period later.
func (r *ruleStatus) counting(d eviction.Deleter) eviction.Deleter {
	return eviction.DeleterFunc(func(ctx context.Context, pod eviction.PodRef) error {
		rules := r.blame(pod)
		r.mu.Lock()
		for _, rule := range rules {
			r.inflight[rule.UID]++
		}
		r.mu.Unlock()
		err := d.Delete(ctx, pod)
		later := r.clock.Now().Add(r.period)
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, rule := range rules {
			if r.inflight[rule.UID]--; r.inflight[rule.UID] == 0 {
				delete(r.inflight, rule.UID)
			}
			if err == nil { // not ErrPodGone: the pod was there, and this delete removed it
				r.evicted[rule.UID]++
				r.queue.ScheduleEarlier(rule.Name, struct{}{}, later)
			}
		}
		return err
	})
}

// blame returns the rulesOf pod's bindings, as kube blames an eviction's rules; for a pod
// no longer in the cache, every NoExecute rule on its device.
func (r *ruleStatus) blame(pod eviction.PodRef) []*resourcev1.DeviceTaintRule {
	d := engine.Target{Bindings: []engine.Binding{{Holder: pod.Holder}}}
	if p, ok, _ := r.src.Target(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}); ok && p.UID == pod.UID {
		r.src.Describe(p, &d)
	}
	return r.rulesOf(d.Bindings)
}

// rulesOf returns the NoExecute rules with a taint that a binding does not tolerate forever.
func (r *ruleStatus) rulesOf(bindings []engine.Binding) []*resourcev1.DeviceTaintRule {
	if len(bindings) == 0 {
		return nil
	}
	now := r.clock.Now()
	var out []*resourcev1.DeviceTaintRule
	for _, rule := range r.src.ruleList() {
		if rule.Spec.Taint.Effect != resourcev1.DeviceTaintEffectNoExecute {
			continue
		}
		taint := tolerations.DeviceTaints([]resourcev1.DeviceTaint{rule.Spec.Taint})
		if slices.ContainsFunc(bindings, func(b engine.Binding) bool {
			return ruleMatches(rule, b.Holder) && tolerations.Deadline(taint, b.Tolerations, now, now, deviceRules).Verdict != tolerations.Stay
		}) {
			out = append(out, rule)
		}
	}
	return out
}

// start counts every rule's condition and makes it due; before, changes schedule nothing.
func (r *ruleStatus) start() {
	r.live.Store(true) // first: a rule that comes while the others are counted is counted too
	now := r.clock.Now()
	for _, rule := range r.src.ruleList() {
		r.count(rule, now)
	}
}

// ruleChanged counts rule name's condition before the engine hears of it, or forgets it.
func (r *ruleStatus) ruleChanged(name string) {
	if !r.live.Load() {
		return
	}
	if rule, ok := get[*resourcev1.DeviceTaintRule](r.src.rules, name); ok {
		r.count(rule, r.clock.Now())
		return
	}
	present := map[types.UID]bool{}
	for _, rl := range r.src.ruleList() {
		present[rl.UID] = true
	}
	r.queue.Cancel(name)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.counted, name)
	delete(r.written, name)
	maps.DeleteFunc(r.evicted, func(uid types.UID, _ int64) bool { return !present[uid] })
}

// count counts rule's condition, keeps it for update, and makes it due at once.
func (r *ruleStatus) count(rule *resourcev1.DeviceTaintRule, now time.Time) {
	c, settled := r.condition(rule, now)
	r.mu.Lock()
	defer r.mu.Unlock()
	if settled {
		r.counted[rule.Name] = counted{uid: rule.UID, generation: rule.Generation, condition: c}
	} else {
		delete(r.counted, rule.Name)
	}
	r.queue.Schedule(rule.Name, struct{}{}, now)
}

// touched is the news that pod, or one of its claims, changed: the status of each rule
// that makes it due is due a period later, as in kube's handlePod.
func (r *ruleStatus) touched(pod *v1.Pod) {
	if !r.live.Load() {
		return
	}
	var d engine.Target
	r.src.Describe(pod, &d)
	for _, rule := range r.rulesOf(d.Bindings) {
		r.queue.ScheduleEarlier(rule.Name, struct{}{}, r.clock.Now().Add(r.period))
	}
}

// dueNow makes rule name's status due at once.
func (r *ruleStatus) dueNow(name string) {
	if r.live.Load() {
		r.queue.ScheduleEarlier(name, struct{}{}, r.clock.Now())
	}
}

// write writes rule name's condition when it is due, and a failed write a period later.
func (r *ruleStatus) write(ctx context.Context, name string, _ struct{}) {
	now := r.clock.Now()
	if err := r.update(ctx, name, now); err != nil {
		klog.FromContext(ctx).V(2).Info("Updating a DeviceTaintRule's status failed; will retry", "rule", name, "err", err)
		r.queue.ScheduleEarlier(name, struct{}{}, now.Add(r.period))
	}
}

// update writes rule name's condition, counted when it changed or now, if it changed.
func (r *ruleStatus) update(ctx context.Context, name string, now time.Time) error {
	r.mu.Lock()
	snap, haveSnap := r.counted[name]
	last, wrote := r.written[name]
	delete(r.counted, name)
	r.mu.Unlock()
	rule, ok := get[*resourcev1.DeviceTaintRule](r.src.rules, name)
	if !ok {
		return nil
	}
	old := meta.FindStatusCondition(rule.Status.Conditions, resourcev1.DeviceTaintConditionEvictionInProgress)
	if wrote && last.uid == rule.UID && (old == nil || old.LastTransitionTime.Before(&last.condition.LastTransitionTime)) {
		old = &last.condition // the cache has not seen our last write yet
	}
	if old != nil && old.ObservedGeneration == rule.Generation && now.Sub(old.LastTransitionTime.Time) < r.period {
		r.queue.ScheduleEarlier(name, struct{}{}, old.LastTransitionTime.Add(r.period))
		return nil
	}
	c := snap.condition
	if !haveSnap || snap.uid != rule.UID || snap.generation != rule.Generation {
		var settled bool
		if c, settled = r.condition(rule, now); !settled {
			return nil // the deletes under way make it due again when they end
		}
	}
	if old != nil && c.Status == old.Status && c.Reason == old.Reason && c.Message == old.Message && c.ObservedGeneration == old.ObservedGeneration {
		return nil
	}
	ltt := metav1.NewTime(now)
	ac := resourceac.DeviceTaintRule(rule.Name).WithUID(rule.UID).WithStatus(resourceac.DeviceTaintRuleStatus().WithConditions(
		metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).WithMessage(c.Message).
			WithObservedGeneration(c.ObservedGeneration).WithLastTransitionTime(ltt)))
	_, err := r.client.ResourceV1().DeviceTaintRules().ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: Component, Force: true})
	if err != nil {
		return fmt.Errorf("device: status of DeviceTaintRule %s: %w", rule.Name, err)
	}
	c.LastTransitionTime = ltt
	r.mu.Lock()
	r.written[name] = counted{uid: rule.UID, generation: rule.Generation, condition: c}
	r.mu.Unlock()
	return nil
}

// condition is rule's EvictionInProgress condition now, in kube's words. It is not settled
// while it selects no pod but deletes for it are under way, whose pods may be uncounted.
func (r *ruleStatus) condition(rule *resourcev1.DeviceTaintRule, now time.Time) (c metav1.Condition, settled bool) {
	c = metav1.Condition{Type: resourcev1.DeviceTaintConditionEvictionInProgress, Status: metav1.ConditionFalse, ObservedGeneration: rule.Generation}
	r.mu.Lock()
	evicted, inflight := r.evicted[rule.UID], r.inflight[rule.UID]
	r.mu.Unlock()
	settled = true
	switch rule.Spec.Taint.Effect {
	case resourcev1.DeviceTaintEffectNoExecute:
		t := r.src.count(r.src.ruleTaints(rule), now)
		why, paused := r.census.why(ruleScope(rule.Name), rule.Spec.Taint.Key)
		settled = t.pods > 0 || inflight == 0
		switch {
		case t.pods > 0:
			c.Status, c.Reason = metav1.ConditionTrue, ReasonPodsPendingEviction
			c.Message = plural(t.pods, "1 pod needs", " pods need") + " to be evicted in " + plural(len(t.namespaces), "1 namespace.", " different namespaces.")
			if paused {
				c.Reason, c.Message = ReasonEvictionPaused, c.Message+" "+why
			}
		case evicted > 0:
			c.Reason = ReasonCompleted
		default:
			c.Reason = ReasonNotStarted
		}
	case resourcev1.DeviceTaintEffectNone:
		t := r.src.count(r.src.ruleTaints(rule), now)
		c.Reason = ReasonNoEffect
		c.Message = plural(r.sliceDevices(rule), "1 published device", " published devices") + " selected. " +
			plural(t.devices, "1 allocated device", " allocated devices") + " selected. " +
			plural(t.pods, "1 pod", " pods") + " would be evicted in " + plural(len(t.namespaces), "1 namespace ", " different namespaces ") +
			"if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update."
	default:
		c.Reason, c.Message = ReasonOtherEffect, "Eviction only happens for the NoExecute effect."
	}
	if evicted > 0 {
		if c.Message != "" {
			c.Message += " "
		}
		c.Message += plural(int(evicted), "1 pod", " pods") + " evicted since starting the controller."
	}
	return c, settled
}

// sliceDevices counts the devices of the slices that rule selects.
func (r *ruleStatus) sliceDevices(rule *resourcev1.DeviceTaintRule) int {
	n := 0
	for _, pool := range r.src.slices.ListIndexFuncValues(PoolIndex) {
		r.src.pool(pool, func(name string, _ []resourcev1.DeviceTaint) {
			if ruleMatches(rule, pool+"/"+name) {
				n++
			}
		})
	}
	return n
}

// plural returns one for n == 1, else n followed by many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprint(n) + many
}
