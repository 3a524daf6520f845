package device

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// ID names a device as a holder of the engine: "driver/pool/device". A driver and a device
// name have no slash, so the pool, which may, is what lies between the first and the last.
func ID(driver, pool, device string) string { return driver + "/" + pool + "/" + device }

func splitID(id string) (driver, pool, device string) {
	i, j := strings.IndexByte(id, '/'), strings.LastIndexByte(id, '/')
	if i < 0 || i == j {
		return "", "", id
	}
	return id[:i], id[i+1 : j], id[j+1:]
}

// poolOf returns "driver/pool" of id: the engine's group of the device.
func poolOf(id string) string { return id[:max(strings.LastIndexByte(id, '/'), 0)] }

// Source is the engine's view of pods on devices (see the package documentation), read
// from the informers' caches at each question, with nothing kept of its own. Its methods
// are safe for concurrent use and never block on the API server. The zero Source is not
// usable: create one with [NewSource].
type Source struct {
	pods, claims, slices, rules cache.Indexer

	feed      sync.Mutex  // orders the holder updates: each is computed and fed under it
	podGroups atomic.Bool // follow the claims reserved for, or made for, a PodGroup
	eng       *engine.Engine[*v1.Pod]
	changed   func(scope string) // told that a rule's or a pool's taints changed, before the engine is
	touched   func(pod *v1.Pod)  // told of each pod whose change, or whose claim's, the engine is told
}

var _ engine.Source[*v1.Pod] = (*Source)(nil)

// NewSource returns the Source over inf, which must have the indexes [NewInformers] adds.
func NewSource(inf Informers) *Source {
	return &Source{pods: inf.Pods.GetIndexer(), claims: inf.Claims.GetIndexer(), slices: inf.Slices.GetIndexer(), rules: inf.Rules.GetIndexer(),
		changed: func(string) {}, touched: func(*v1.Pod) {}}
}

// FollowPodGroups says whether Describe follows a PodGroup's claims to its pods
// ([PodGroupMode]); a new Source does not. Set it before the engine runs.
func (s *Source) FollowPodGroups(follow bool) { s.podGroups.Store(follow) }

// Target returns the pod from the pod informer's store.
func (s *Source) Target(key types.NamespacedName) (*v1.Pod, bool, error) {
	pod, ok := get[*v1.Pod](s.pods, key.Namespace+"/"+key.Name)
	return pod, ok, nil
}

// Pod returns the pod from the pod informer's store, or nil: the deleters' PodGetter.
func (s *Source) Pod(namespace, name string) (*v1.Pod, error) {
	pod, _ := get[*v1.Pod](s.pods, namespace+"/"+name)
	return pod, nil
}

// TargetsOn returns the pods that use a claim allocated the device.
func (s *Source) TargetsOn(id string) ([]*v1.Pod, error) {
	claims, err := s.claims.IndexKeys(DeviceIndex, id) // "namespace/claim", as ClaimIndex names them
	var pods []*v1.Pod
	for _, claim := range claims {
		objs, e := s.pods.ByIndex(ClaimIndex, claim)
		for _, o := range objs {
			if pod, ok := o.(*v1.Pod); ok && (len(claims) == 1 || !slices.Contains(pods, pod)) {
				pods = append(pods, pod)
			}
		}
		err = cmp.Or(err, e)
	}
	return pods, err
}

// Holder returns the device's taints; a device in no slice and without taints is not found.
func (s *Source) Holder(id string) (engine.Holder, bool, error) {
	h, inSlice := s.holder(id, s.ruleList())
	return h, inSlice || len(h.Taints) > 0, nil
}

// Locate returns the pod's key and its first allocated device.
func (s *Source) Locate(pod *v1.Pod) (types.NamespacedName, string) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	for name := range resourceclaim.PodClaims(pod) {
		if c, ok := get[*resourcev1.ResourceClaim](s.claims, pod.Namespace+"/"+name); ok && c.Status.Allocation != nil && len(c.Status.Allocation.Devices.Results) > 0 {
			r := c.Status.Allocation.Devices.Results[0]
			return key, ID(r.Driver, r.Pool, r.Device)
		}
	}
	return key, ""
}

// Describe binds a scheduled pod to every device of every claim it uses
// ([resourceclaim.PodClaims], checked by [resourceclaim.IsForPod]) that is allocated and
// reserved for it ([resourceclaim.IsReservedForPod]), each with the tolerations of its
// allocation result; with [Source.FollowPodGroups], through the pod's PodGroup too. A pod
// being deleted or finished is leaving; its owner is [eviction.PodOwner]'s.
func (s *Source) Describe(pod *v1.Pod, d *engine.Target) {
	d.Key, d.UID, d.Leaving, d.GoneBy = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, pod.UID, eviction.LeavingReason(pod), eviction.GoneBy(pod)
	d.Owner, d.Created = eviction.PodOwner(pod), pod.CreationTimestamp.Time
	d.Bindings = d.Bindings[:0]
	groups := s.podGroups.Load()
	for name, mustCheckOwner := range resourceclaim.PodClaims(pod) {
		c, ok := get[*resourcev1.ResourceClaim](s.claims, pod.Namespace+"/"+name)
		if !ok || pod.Spec.NodeName == "" || c.Status.Allocation == nil || !resourceclaim.IsReservedForPod(pod, c, groups) ||
			mustCheckOwner && resourceclaim.IsForPod(pod, c, groups) != nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			d.Bindings = append(d.Bindings, engine.Binding{Holder: ID(r.Driver, r.Pool, r.Device), Tolerations: tolerations.DeviceTolerations(r.Tolerations)})
		}
	}
}

// ruleMatches is kube's ruleMatchesDevice: a rule without a selector selects nothing.
func ruleMatches(rule *resourcev1.DeviceTaintRule, id string) bool {
	sel := rule.Spec.DeviceSelector
	driver, pool, device := splitID(id)
	return sel != nil && (sel.Driver == nil || *sel.Driver == driver) && (sel.Pool == nil || *sel.Pool == pool) && (sel.Device == nil || *sel.Device == device)
}

// ruleList returns the DeviceTaintRules by name, so that a device's taints keep one order.
func (s *Source) ruleList() []*resourcev1.DeviceTaintRule {
	var rules []*resourcev1.DeviceTaintRule
	for _, o := range s.rules.List() {
		if r, ok := o.(*resourcev1.DeviceTaintRule); ok {
			rules = append(rules, r)
		}
	}
	slices.SortFunc(rules, func(a, b *resourcev1.DeviceTaintRule) int { return cmp.Compare(a.Name, b.Name) })
	return rules
}

// pool calls f with the name and taints of each device of the pool's newest slices (only
// those count, as in kube), and returns the names of the older slices' devices.
func (s *Source) pool(pool string, f func(name string, taints []resourcev1.DeviceTaint)) (older []string) {
	objs, _ := s.slices.ByIndex(PoolIndex, pool)
	newest := newestGeneration(objs)
	for _, o := range objs {
		if sl, ok := o.(*resourcev1.ResourceSlice); ok {
			for _, d := range sl.Spec.Devices {
				if sl.Spec.Pool.Generation == newest {
					f(d.Name, d.Taints)
				} else {
					older = append(older, d.Name)
				}
			}
		}
	}
	return older
}

func newestGeneration(objs []any) int64 {
	var newest int64
	for i, o := range objs {
		if sl, ok := o.(*resourcev1.ResourceSlice); ok && (i == 0 || sl.Spec.Pool.Generation > newest) {
			newest = sl.Spec.Pool.Generation
		}
	}
	return newest
}

// holder returns device id with its slice's taints, then its rules', and whether it has one.
func (s *Source) holder(id string, rules []*resourcev1.DeviceTaintRule) (h engine.Holder, inSlice bool) {
	_, _, name := splitID(id)
	var taints []resourcev1.DeviceTaint
	s.pool(poolOf(id), func(d string, t []resourcev1.DeviceTaint) {
		if d == name {
			taints, inSlice = t, true
		}
	})
	return engine.Holder{Name: id, Taints: withRules(tolerations.DeviceTaints(taints), rules, id), Group: poolOf(id)}, inSlice
}

// withRules appends to taints those of the rules that select device id.
func withRules(taints []v1.Taint, rules []*resourcev1.DeviceTaintRule, id string) []v1.Taint {
	for _, r := range rules {
		if ruleMatches(r, id) {
			taints = append(taints, tolerations.DeviceTaints([]resourcev1.DeviceTaint{r.Spec.Taint})...)
		}
	}
	return taints
}

// poolChanged feeds the engine every device of the pool's slices, of any generation.
func (s *Source) poolChanged(pool string, old *resourcev1.ResourceSlice) {
	s.feed.Lock()
	defer s.feed.Unlock()
	rules, now := s.ruleList(), map[string][]resourcev1.DeviceTaint{}
	names := s.pool(pool, func(name string, t []resourcev1.DeviceTaint) { now[name] = t })
	for _, d := range old.Spec.Devices {
		names = append(names, d.Name)
	}
	names = slices.AppendSeq(names, maps.Keys(now))
	slices.Sort(names)
	s.changed(poolScope(pool))
	for _, name := range slices.Compact(names) {
		id := pool + "/" + name
		s.eng.HolderUpdated(engine.Holder{Name: id, Taints: withRules(tolerations.DeviceTaints(now[name]), rules, id), Group: pool})
	}
}

// ruleChanged feeds the engine the devices, of the slices and allocated, that old or new
// selects; a change of its ConfirmAnnotation alone only tells changed.
func (s *Source) ruleChanged(old, new *resourcev1.DeviceTaintRule) {
	if old != nil && new != nil && old.UID == new.UID && reflect.DeepEqual(old.Spec, new.Spec) {
		if old.Annotations[eviction.ConfirmAnnotation] != new.Annotations[eviction.ConfirmAnnotation] {
			s.changed(ruleScope(new.Name))
		}
		return
	}
	s.feed.Lock()
	defer s.feed.Unlock()
	rules, ids := s.ruleList(), s.claims.ListIndexFuncValues(DeviceIndex)
	for _, o := range s.slices.List() {
		if sl, ok := o.(*resourcev1.ResourceSlice); ok {
			for _, d := range sl.Spec.Devices {
				ids = append(ids, ID(sl.Spec.Driver, sl.Spec.Pool.Name, d.Name))
			}
		}
	}
	slices.Sort(ids)
	s.changed(ruleScope(cmp.Or(new, old).Name))
	for _, id := range slices.Compact(ids) {
		if old != nil && ruleMatches(old, id) || new != nil && ruleMatches(new, id) {
			h, _ := s.holder(id, rules)
			s.eng.HolderUpdated(h)
		}
	}
}

// claimChanged passes on the claim's pods, after the newly allocated devices rules taint.
func (s *Source) claimChanged(old, new *resourcev1.ResourceClaim) {
	if old != nil && new != nil && old.UID == new.UID && slices.Equal(old.Status.ReservedFor, new.Status.ReservedFor) &&
		reflect.DeepEqual(old.Status.Allocation, new.Status.Allocation) {
		return
	}
	if new != nil && new.Status.Allocation != nil && (old == nil || old.Status.Allocation == nil) {
		s.feed.Lock()
		rules := s.ruleList()
		for _, r := range new.Status.Allocation.Devices.Results {
			if id := ID(r.Driver, r.Pool, r.Device); len(withRules(nil, rules, id)) > 0 {
				h, _ := s.holder(id, rules)
				s.eng.HolderUpdated(h)
			}
		}
		s.feed.Unlock()
	}
	c := cmp.Or(new, old)
	pods, _ := s.pods.ByIndex(ClaimIndex, c.Namespace+"/"+c.Name)
	for _, o := range pods {
		if pod, ok := o.(*v1.Pod); ok {
			s.eng.TargetUpdated(pod)
			s.touched(pod)
		}
	}
}

// podChanged passes on the updates of pods with claims that can change their bindings.
func (s *Source) podChanged(old, new *v1.Pod) {
	uses := func(p *v1.Pod) bool {
		return p != nil && (len(p.Spec.ResourceClaims) > 0 || p.Status.ExtendedResourceClaimStatus != nil)
	}
	switch {
	case new == nil:
		if uses(old) {
			s.eng.TargetDeleted(old)
			s.touched(old)
		}
	case !uses(new) && !uses(old):
	case old == nil || old.UID != new.UID || old.Spec.NodeName != new.Spec.NodeName || eviction.LeavingReason(old) != eviction.LeavingReason(new) ||
		!resourceclaim.PodStatusEqual(old.Status.ResourceClaimStatuses, new.Status.ResourceClaimStatuses) ||
		!resourceclaim.PodExtendedStatusEqual(old.Status.ExtendedResourceClaimStatus, new.Status.ExtendedResourceClaimStatus):
		s.eng.TargetUpdated(new)
		s.touched(new)
	}
}

// AddHandlers connects the informers to eng, once, before they start. It returns what is
// done once each handler has been handed its informer's initial listing: wait for them
// (cache.WaitFor) before calling eng.Synced, so that the budgets count every device.
func (s *Source) AddHandlers(inf Informers, eng *engine.Engine[*v1.Pod], logger klog.Logger) ([]cache.DoneChecker, error) {
	s.eng = eng
	var synced []cache.DoneChecker
	for _, h := range []struct {
		inf cache.SharedIndexInformer
		fn  cache.ResourceEventHandler
	}{
		{inf.Slices, clientgo.HandlerFuncs(logger, func(old, new *resourcev1.ResourceSlice) {
			s.poolChanged(poolName(cmp.Or(new, old)), cmp.Or(old, new))
		})},
		{inf.Rules, clientgo.HandlerFuncs(logger, s.ruleChanged)},
		{inf.Claims, clientgo.HandlerFuncs(logger, s.claimChanged)},
		{inf.Pods, clientgo.HandlerFuncs(logger, s.podChanged)},
	} {
		reg, err := h.inf.AddEventHandlerWithOptions(h.fn, cache.HandlerOptions{Logger: &logger})
		if err != nil {
			return nil, fmt.Errorf("device: adding an event handler: %w", err)
		}
		synced = append(synced, reg.HasSyncedChecker())
	}
	return synced, nil
}

// get returns the object of store under key; one of another type counts as none.
func get[T any](store cache.Indexer, key string) (T, bool) {
	obj, _, _ := store.GetByKey(key)
	t, ok := obj.(T)
	return t, ok
}
