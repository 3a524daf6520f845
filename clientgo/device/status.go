package device

import (
	"context"
	"fmt"
	"sync"
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
	"github.com/taintevict/taintevict/tolerations"
)

// The reasons of the EvictionInProgress condition on a DeviceTaintRule: kube's, and
// ReasonEvictionPaused, ours, for a rule that [Budget] pauses.
const (
	ReasonPodsPendingEviction = "PodsPendingEviction"
	ReasonCompleted           = "Completed"
	ReasonNotStarted          = "NotStarted"
	ReasonNoEffect            = "NoEffect"
	ReasonOtherEffect         = "OtherEffect"
	ReasonEvictionPaused      = "EvictionPaused"
)

// DefaultStatusPeriod is kube's shortest time between two updates of a rule's status while
// its evictions are in progress.
const DefaultStatusPeriod = 10 * time.Second

var deviceRules = tolerations.Options{Rules: tolerations.DeviceRules}

// tally is what taints on some devices would evict: pods that do not tolerate one of them
// forever, in all and per namespace, and the allocated devices the taints are on.
type tally struct {
	pods, devices int
	namespaces    map[string]int
}

// count tallies the pods that taintsOn(id), the NoExecute taints a scope puts on device id,
// would evict: scheduled pods, not leaving, bound to id with tolerations that let one of
// them run out (kube's pending pods). With taintsOn nil it tallies every pod bound to a
// device.
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

// ruleTaints returns what rule puts on a device it selects, as a NoExecute taint: for
// count, which simulates a rule of effect None as kube does.
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

// ruleStatus keeps the EvictionInProgress condition of every DeviceTaintRule as kube's
// maybeUpdateRuleStatus writes it (same reasons, same messages), with server-side apply
// bound to the rule's UID: at once for a new rule or a new generation, then, while the
// rule evicts, at most every period. It counts the pods evicted per rule (see counting):
// the rules that taint the device the pod was evicted for.
type ruleStatus struct {
	client kubernetes.Interface
	src    *Source
	budget *budget // nil without one
	clock  clock.Clock
	period time.Duration
	kick   chan struct{}

	mu      sync.Mutex
	evicted map[types.UID]int64
	// inflight counts, per rule, the deletes under way that would count for it: their pods
	// may have left the cache before the delete has returned and been counted.
	inflight map[types.UID]int
}

// counting returns d, counting each pod it removes for the rules that blame returned just
// before the delete: after it, the pod may be gone from the cache already (its watch event
// can come before the DELETE's answer), and its tolerations with it.
func (r *ruleStatus) counting(d eviction.Deleter) eviction.Deleter {
	return eviction.DeleterFunc(func(ctx context.Context, pod eviction.PodRef) error {
		rules := r.blame(pod)
		r.mu.Lock()
		for _, uid := range rules {
			r.inflight = putCount(r.inflight, uid, 1)
		}
		r.mu.Unlock()
		err := d.Delete(ctx, pod)
		r.mu.Lock()
		for _, uid := range rules {
			r.inflight = putCount(r.inflight, uid, -1)
			if err == nil { // not ErrPodGone: the pod was there, and this delete removed it
				r.evicted[uid]++
			}
		}
		r.mu.Unlock()
		return err
	})
}

// putCount adds n to m[uid], dropping the entry at zero, and returns m.
func putCount(m map[types.UID]int, uid types.UID, n int) map[types.UID]int {
	if m == nil {
		m = make(map[types.UID]int)
	}
	if m[uid] += n; m[uid] == 0 {
		delete(m, uid)
	}
	return m
}

// blame returns the rules a removal of pod counts for: the NoExecute rules that taint the
// device it is evicted for with a taint it does not tolerate forever there, as kube counts
// the rules among the eviction's reasons. A pod not in the cache counts for every such
// rule.
func (r *ruleStatus) blame(pod eviction.PodRef) []types.UID {
	var tols []v1.Toleration
	known := false
	if p, ok, _ := r.src.Target(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}); ok && p.UID == pod.UID {
		var d engine.Target
		r.src.Describe(p, &d)
		for _, b := range d.Bindings {
			if b.Holder == pod.Holder {
				tols, known = b.Tolerations, true
				break
			}
		}
	}
	now := r.clock.Now()
	var blamed []types.UID
	for _, rule := range r.src.ruleList() {
		if rule.Spec.Taint.Effect != resourcev1.DeviceTaintEffectNoExecute || !ruleMatches(rule, pod.Holder) {
			continue
		}
		if known && tolerations.Deadline(tolerations.DeviceTaints([]resourcev1.DeviceTaint{rule.Spec.Taint}), tols, now, now, deviceRules).Verdict == tolerations.Stay {
			continue
		}
		blamed = append(blamed, rule.UID)
	}
	return blamed
}

// forget drops the counts of the rules that are gone, as kube does.
func (r *ruleStatus) forget(present map[types.UID]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid := range r.evicted {
		if !present[uid] {
			delete(r.evicted, uid)
		}
	}
}

// changed asks for an update of the rules at once.
func (r *ruleStatus) changed() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// run updates the rules' status until ctx is done: at once, then at each kick and each
// period. It rechecks the paused scopes of the budget first.
func (r *ruleStatus) run(ctx context.Context) {
	for {
		next := r.clock.NewTimer(r.period)
		if r.budget != nil {
			r.budget.recheck()
		}
		present := map[types.UID]bool{}
		for _, o := range r.src.rules.List() {
			if rule, ok := o.(*resourcev1.DeviceTaintRule); ok {
				present[rule.UID] = true
				if err := r.update(ctx, rule); err != nil {
					klog.FromContext(ctx).V(2).Info("Updating a DeviceTaintRule's status failed; will retry", "rule", rule.Name, "err", err)
				}
			}
		}
		r.forget(present)
		select {
		case <-ctx.Done():
			next.Stop()
			return
		case <-r.kick:
			next.Stop()
		case <-next.C():
		}
	}
}

// update writes rule's condition when it is due and differs from the one it has.
func (r *ruleStatus) update(ctx context.Context, rule *resourcev1.DeviceTaintRule) error {
	now := r.clock.Now()
	old := meta.FindStatusCondition(rule.Status.Conditions, resourcev1.DeviceTaintConditionEvictionInProgress)
	// Kube writes None and other effects once per generation, NoExecute every period.
	if old != nil && old.ObservedGeneration == rule.Generation && (rule.Spec.Taint.Effect != resourcev1.DeviceTaintEffectNoExecute || now.Sub(old.LastTransitionTime.Time) < r.period) {
		return nil
	}
	c, settled := r.condition(rule, now)
	if !settled {
		return nil // the next period writes it
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
	return nil
}

// condition is rule's EvictionInProgress condition now, in kube's words. It is not settled
// when the rule selects no pod left to evict but deletes for it are under way: their pods
// may have left the cache before the deletes were counted, and the condition would say
// NotStarted, or miss them in its count, until they are.
func (r *ruleStatus) condition(rule *resourcev1.DeviceTaintRule, now time.Time) (c metav1.Condition, settled bool) {
	c = metav1.Condition{Type: resourcev1.DeviceTaintConditionEvictionInProgress, Status: metav1.ConditionFalse, ObservedGeneration: rule.Generation}
	r.mu.Lock()
	evicted, inflight := r.evicted[rule.UID], r.inflight[rule.UID]
	r.mu.Unlock()
	settled = true
	switch rule.Spec.Taint.Effect {
	case resourcev1.DeviceTaintEffectNoExecute:
		t := r.src.count(r.src.ruleTaints(rule), now)
		why, paused := r.budget.why(ruleScope(rule.Name))
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
