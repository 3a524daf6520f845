package device

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/utils/clock"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// The scopes of the census, by name: these are the scopes of engine.Engine.Recounted.
func ruleScope(name string) string { return "DeviceTaintRule " + name }
func poolScope(pool string) string { return "pool " + pool }

// uncountedScope holds the evictions due by a taint that the census has not yet seen come
// from a rule or a slice: the informers' stores have it, the handler that tells the census
// has not run yet.
const uncountedScope = "census: counting"

// census is the device side's engine.Census, for engine.Options.Confirm (kubernetes#141422:
// one DeviceTaintRule with an empty selector evicted every pod that used a device). Its
// scopes are the DeviceTaintRules of effect NoExecute and the pools whose ResourceSlices
// put NoExecute taints on their devices. A scope would evict the pods that a rule's status
// counts as pending (see Source.count), of all the pods that use devices. A rule is
// confirmed by its [eviction.ConfirmAnnotation] naming its taint's key (or "*"); a pool by
// that annotation on one of its ResourceSlices of the newest generation.
//
// Reach, which the engine calls under its locks, only reads what was counted: the scopes
// of each taint, kept from the informers' handlers before the engine hears of a change,
// and each scope's counts, made off the engine's locks (at each period, and when Reach
// met a scope not counted yet). A scope not counted yet holds the eviction until run has
// counted it; a cause of no scope known yet holds it under uncountedScope until the
// handler that brings its rule or slice has run. The census tells flip of each scope whose
// verdict changed: over Confirm's rule or not, confirmed or not, counted at last.
//
// Locks: counting orders the updates (a handler's and run's) and is held while counting;
// mu guards the maps, and is all Reach takes. Order: Source.feed, counting, mu.
type census struct {
	rule   engine.Confirm
	src    *Source
	clock  clock.Clock
	period time.Duration
	flip   func(scope string) // called under counting, never under mu
	kick   chan struct{}      // wakes run: Reach met a scope that was not counted

	counting sync.Mutex
	live     bool // under counting: every scope was counted once the caches synced

	mu        sync.Mutex
	known     map[string]string              // every scope the census keeps: its ConfirmAnnotation (a pool's slices', joined)
	verdicts  map[string]verdict             // by scope, once counted
	all       verdict                        // the pods that use devices, in all (tally only)
	rules     map[string][]ruleSelector      // the NoExecute rules, by their taint's key
	pools     map[string]map[string][]string // pool -> device -> the keys of its NoExecute taints
	uncounted map[string]bool                // scopes Reach found with no count
	heldNew   bool                           // Reach held evictions under uncountedScope
}

// ruleSelector is what the census keeps of a NoExecute rule: its scope and its selector.
type ruleSelector struct {
	scope string
	rule  *resourcev1.DeviceTaintRule // from the store: read only
}

// verdict is a scope's count, and whether it is over Confirm's rule.
type verdict struct {
	at   time.Time
	t    tally
	over bool
}

var _ engine.Census = (*census)(nil)

func newCensus(rule engine.Confirm, src *Source, clk clock.Clock, period time.Duration, flip func(scope string)) *census {
	return &census{rule: rule, src: src, clock: clk, period: period, flip: flip, kick: make(chan struct{}, 1),
		known: map[string]string{}, verdicts: map[string]verdict{}, rules: map[string][]ruleSelector{},
		pools: map[string]map[string][]string{}, uncounted: map[string]bool{}}
}

// Reach appends each scope that puts a NoExecute taint with the cause's key on its device,
// as last counted; a scope known and not counted is marked for run, and a cause of no
// scope known yet gets uncountedScope, not counted.
func (b *census) Reach(c engine.Cause, into []engine.Reach) []engine.Reach {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(into)
	add := func(sc string) {
		v, counted := b.verdicts[sc]
		if !counted {
			b.uncounted[sc] = true
			select {
			case b.kick <- struct{}{}:
			default:
			}
		}
		into = append(into, engine.Reach{Scope: sc, Evicts: v.t.pods, Targets: b.all.t.pods, Counted: counted,
			Confirmed: eviction.Confirms(b.known[sc], c.Key)})
	}
	driver, pool, name := splitID(c.Holder)
	if slices.Contains(b.pools[driver+"/"+pool][name], c.Key) {
		add(poolScope(driver + "/" + pool))
	}
	for _, r := range b.rules[c.Key] {
		if ruleMatches(r.rule, c.Holder) {
			add(r.scope)
		}
	}
	if len(into) == n {
		b.heldNew = true
		into = append(into, engine.Reach{Scope: uncountedScope})
	}
	return into
}

// scopeTaints returns what scope puts on devices, for count; nil for a scope that is gone.
func (s *Source) scopeTaints(scope string) func(string) []v1.Taint {
	for _, r := range s.ruleList() {
		if ruleScope(r.Name) == scope && r.Spec.Taint.Effect == resourcev1.DeviceTaintEffectNoExecute {
			return s.ruleTaints(r)
		}
	}
	pool, ok := strings.CutPrefix(scope, poolScope(""))
	if !ok {
		return nil
	}
	taints := map[string][]v1.Taint{}
	s.pool(pool, func(name string, t []resourcev1.DeviceTaint) {
		taints[pool+"/"+name] = tolerations.NoExecuteTaints(tolerations.DeviceTaints(t))
	})
	return func(id string) []v1.Taint { return taints[id] }
}

// poolConfirm returns the ConfirmAnnotations of the pool's ResourceSlices of the newest
// generation, joined.
func (s *Source) poolConfirm(pool string) string {
	objs, _ := s.slices.ByIndex(PoolIndex, pool)
	newest := newestGeneration(objs)
	var values []string
	for _, o := range objs {
		if sl, ok := o.(*resourcev1.ResourceSlice); ok && sl.Spec.Pool.Generation == newest {
			if v := sl.Annotations[eviction.ConfirmAnnotation]; v != "" {
				values = append(values, v)
			}
		}
	}
	return strings.Join(values, ",")
}

// changed is the Source's news, before the engine hears it, that the taints (or the
// confirmation) of scope changed in the stores: the census reads the scope again and, once
// live, counts it afresh; then it tells flip if its verdict changed.
func (b *census) changed(scope string) {
	b.counting.Lock()
	defer b.counting.Unlock()
	flip := b.read(scope)
	if b.live {
		flip = b.count(scope) || flip
	}
	b.release(scope, flip)
}

// read takes what the stores say of scope's taints and confirmation into the census, and
// reports whether its confirmation changed; under counting.
func (b *census) read(scope string) (flip bool) {
	if pool, ok := strings.CutPrefix(scope, poolScope("")); ok {
		devices := map[string][]string{}
		b.src.pool(pool, func(name string, taints []resourcev1.DeviceTaint) {
			for _, t := range taints {
				if t.Effect == resourcev1.DeviceTaintEffectNoExecute && !slices.Contains(devices[name], t.Key) {
					devices[name] = append(devices[name], t.Key)
				}
			}
		})
		confirm := b.src.poolConfirm(pool)
		b.mu.Lock()
		defer b.mu.Unlock()
		flip = b.known[scope] != confirm
		if len(devices) == 0 {
			delete(b.pools, pool)
			b.forget(scope)
		} else {
			b.pools[pool], b.known[scope] = devices, confirm
		}
		return flip
	}
	name, _ := strings.CutPrefix(scope, ruleScope(""))
	rule, _ := get[*resourcev1.DeviceTaintRule](b.src.rules, name)
	b.mu.Lock()
	defer b.mu.Unlock()
	for key, rs := range b.rules {
		if rs = slices.DeleteFunc(rs, func(r ruleSelector) bool { return r.scope == scope }); len(rs) == 0 {
			delete(b.rules, key)
		} else {
			b.rules[key] = rs
		}
	}
	if rule == nil || rule.Spec.Taint.Effect != resourcev1.DeviceTaintEffectNoExecute {
		b.forget(scope)
		return false
	}
	key, confirm := rule.Spec.Taint.Key, rule.Annotations[eviction.ConfirmAnnotation]
	b.rules[key] = append(b.rules[key], ruleSelector{scope: scope, rule: rule})
	flip = b.known[scope] != confirm
	b.known[scope] = confirm
	return flip
}

// forget drops scope; under mu.
func (b *census) forget(scope string) {
	delete(b.known, scope)
	delete(b.verdicts, scope)
}

// count counts what scope would evict now, and keeps it; it reports whether its verdict
// changed (or it was not counted before). It counts the pods that use devices first when
// that count is older than the period. Under counting; not under mu.
func (b *census) count(scope string) (flip bool) {
	now := b.clock.Now()
	b.mu.Lock()
	all := b.all
	old, counted := b.verdicts[scope]
	delete(b.uncounted, scope)
	b.mu.Unlock()
	nv := verdict{at: now}
	// A scope gone from the stores, and not yet from the census (its handler is on the
	// way), holds nothing, so that Reach does not ask again and again.
	taints := b.src.scopeTaints(scope)
	if taints != nil {
		if all.at.IsZero() || now.Sub(all.at) >= b.period {
			all = verdict{at: now, t: b.src.count(nil, now)}
		}
		nv.t = b.src.count(taints, now)
		nv.over = b.rule.Exceeds(nv.t.pods, all.t.pods)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, known := b.known[scope]; taints != nil || counted || known {
		b.all, b.verdicts[scope] = all, nv
	}
	return !counted || old.over != nv.over
}

// release tells flip of scope when its verdict changed, and of uncountedScope when Reach
// held evictions for want of a scope; under counting.
func (b *census) release(scope string, flip bool) {
	b.mu.Lock()
	held := b.heldNew
	b.heldNew = false
	b.mu.Unlock()
	if flip {
		b.flip(scope)
	}
	if held {
		b.flip(uncountedScope)
	}
}

// why returns the message of a scope held until it is confirmed, and whether it is held,
// as last counted. A nil census holds nothing.
func (b *census) why(scope, key string) (string, bool) {
	if b == nil {
		return "", false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.verdicts[scope]
	if !ok || !v.over || eviction.Confirms(b.known[scope], key) {
		return "", false
	}
	return fmt.Sprintf("Eviction paused: it would evict %d of the %d pods that use devices, more than %g%%. Annotate the DeviceTaintRule with %s=%s to confirm it.",
		v.t.pods, b.all.t.pods, 100*b.rule.Fraction, eviction.ConfirmAnnotation, key), true
}

// goLive reads every scope from the stores and counts it: the caches have synced, and the
// handlers did not count before. Lead calls it before the engine runs.
func (b *census) goLive() {
	b.counting.Lock()
	defer b.counting.Unlock()
	for _, r := range b.src.ruleList() {
		b.read(ruleScope(r.Name))
	}
	for _, pool := range b.src.slices.ListIndexFuncValues(PoolIndex) {
		b.read(poolScope(pool))
	}
	for _, sc := range b.knownScopes() {
		if b.count(sc) {
			b.flip(sc)
		}
	}
	b.live = true
}

// run keeps the counts until ctx is done: it counts every scope again at each period, and
// those Reach asked about when it asks, and tells flip of each whose verdict changed.
func (b *census) run(ctx context.Context) {
	next := b.clock.NewTimer(b.period)
	defer next.Stop()
	for {
		var scopes []string
		select {
		case <-ctx.Done():
			return
		case <-next.C():
			next.Reset(b.period)
			scopes = b.knownScopes()
		case <-b.kick:
			b.mu.Lock()
			scopes = slices.Collect(maps.Keys(b.uncounted))
			b.mu.Unlock()
		}
		b.counting.Lock()
		for _, sc := range scopes {
			b.release(sc, b.count(sc))
		}
		b.counting.Unlock()
	}
}

// knownScopes returns the scopes the census keeps, sorted.
func (b *census) knownScopes() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Sorted(maps.Keys(b.known))
}
