package device

import (
	"context"
	"fmt"
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

// The census's scopes, as engine.Engine.Recounted names them.
func ruleScope(name string) string { return "DeviceTaintRule " + name }
func poolScope(pool string) string { return "pool " + pool }

// uncountedScope holds the evictions due by a taint that the census has not seen come yet.
const uncountedScope = "census: counting"

// census is the engine.Census of engine.Options.Confirm. Its scopes are the NoExecute
// DeviceTaintRules and the pools whose ResourceSlices put NoExecute taints on their
// devices; a scope would evict what a rule's status counts as pending (Source.count).
// Reach, called under the engine's locks, reads only what the census keeps: the scopes,
// read by the handlers before the engine hears of a change, and their counts, made off
// the engine's locks; a scope not counted yet holds until it is.
//
// Locks: counting orders the updates (a handler's and run's) and is held while counting;
// mu guards the scopes, and is all Reach takes. Order: Source.feed, counting, mu.
type census struct {
	rule   engine.Confirm
	src    *Source
	clock  clock.Clock
	period time.Duration
	flip   func(scope string) // called under counting, never under mu
	kick   chan struct{}      // wakes run: Reach met a scope that was not counted

	counting sync.Mutex
	live     bool // under counting: every scope was counted once the caches synced

	mu      sync.Mutex
	scopes  map[string]*scope   // every scope the census keeps, by name
	byKey   map[string][]*scope // the rules' scopes, by their taint's key
	all     int                 // the pods that use devices, counted at allAt
	allAt   time.Time
	heldNew bool // Reach held evictions under uncountedScope
}

// scope is what the census keeps of a NoExecute rule, or of a pool with NoExecute taints.
type scope struct {
	name    string
	confirm string                      // its ConfirmAnnotation (a pool's slices', joined)
	rule    *resourcev1.DeviceTaintRule // a rule's, from the store: read only
	keys    map[string][]string         // a pool's: device ID -> the keys of its NoExecute taints
	counted bool                        // pods and over say what it would evict
	asked   bool                        // Reach found it not counted: run counts it
	pods    int
	over    bool // more than Confirm's rule allows
}

var _ engine.Census = (*census)(nil)

func newCensus(rule engine.Confirm, src *Source, clk clock.Clock, period time.Duration, flip func(scope string)) *census {
	return &census{rule: rule, src: src, clock: clk, period: period, flip: flip, kick: make(chan struct{}, 1),
		scopes: map[string]*scope{}, byKey: map[string][]*scope{}}
}

// Reach appends each scope that puts a NoExecute taint with the cause's key on its device,
// as last counted, or uncountedScope.
func (b *census) Reach(c engine.Cause, into []engine.Reach) []engine.Reach {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(into)
	add := func(sc *scope) {
		if !sc.counted {
			sc.asked = true
			poke(b.kick)
		}
		into = append(into, engine.Reach{Scope: sc.name, Evicts: sc.pods, Targets: b.all, Counted: sc.counted,
			Confirmed: eviction.Confirms(sc.confirm, c.Key)})
	}
	if sc := b.scopes[poolScope(poolOf(c.Holder))]; sc != nil && slices.Contains(sc.keys[c.Holder], c.Key) {
		add(sc)
	}
	for _, sc := range b.byKey[c.Key] {
		if ruleMatches(sc.rule, c.Holder) {
			add(sc)
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
	if name, ok := strings.CutPrefix(scope, ruleScope("")); ok {
		if r, ok := get[*resourcev1.DeviceTaintRule](s.rules, name); ok && r.Spec.Taint.Effect == resourcev1.DeviceTaintEffectNoExecute {
			return s.ruleTaints(r)
		}
		return nil
	}
	pool := strings.TrimPrefix(scope, poolScope(""))
	taints := map[string][]v1.Taint{}
	s.pool(pool, func(name string, t []resourcev1.DeviceTaint) {
		taints[pool+"/"+name] = tolerations.NoExecuteTaints(tolerations.DeviceTaints(t))
	})
	return func(id string) []v1.Taint { return taints[id] }
}

// changed reads scope again, before the engine hears of its change, and once live counts it.
func (b *census) changed(scope string) {
	b.counting.Lock()
	defer b.counting.Unlock()
	flip := b.read(scope)
	if b.live {
		flip = b.count(scope) || flip
	}
	b.release(scope, flip)
}

// read takes scope's taints and confirmation (a pool's: its newest slices', joined) from the
// stores, and reports whether its confirmation changed; under counting.
func (b *census) read(name string) (flip bool) {
	sc := &scope{name: name}
	if pool, ok := strings.CutPrefix(name, poolScope("")); ok {
		objs, _ := b.src.slices.ByIndex(PoolIndex, pool)
		newest, confirms := newestGeneration(objs), []string{}
		for _, o := range objs {
			if sl, ok := o.(*resourcev1.ResourceSlice); ok && sl.Spec.Pool.Generation == newest && sl.Annotations[eviction.ConfirmAnnotation] != "" {
				confirms = append(confirms, sl.Annotations[eviction.ConfirmAnnotation])
			}
		}
		sc.keys, sc.confirm = map[string][]string{}, strings.Join(confirms, ",")
		b.src.pool(pool, func(device string, taints []resourcev1.DeviceTaint) {
			id := pool + "/" + device
			for _, t := range taints {
				if t.Effect == resourcev1.DeviceTaintEffectNoExecute && !slices.Contains(sc.keys[id], t.Key) {
					sc.keys[id] = append(sc.keys[id], t.Key)
				}
			}
		})
		return b.keep(sc, len(sc.keys) > 0)
	}
	rule, _ := get[*resourcev1.DeviceTaintRule](b.src.rules, strings.TrimPrefix(name, ruleScope("")))
	if rule != nil && rule.Spec.Taint.Effect == resourcev1.DeviceTaintEffectNoExecute {
		sc.rule, sc.confirm = rule, rule.Annotations[eviction.ConfirmAnnotation]
	}
	return b.keep(sc, sc.rule != nil) && sc.rule != nil
}

// keep puts sc, with the counts of the scope of its name, in that one's place, or, not
// present, drops that one; it reports whether the confirmation changed.
func (b *census) keep(sc *scope, present bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.scopes[sc.name]
	if old == nil {
		old = &scope{}
	} else if old.rule != nil {
		key := old.rule.Spec.Taint.Key
		if b.byKey[key] = slices.DeleteFunc(b.byKey[key], func(s *scope) bool { return s == old }); len(b.byKey[key]) == 0 {
			delete(b.byKey, key)
		}
	}
	if !present {
		delete(b.scopes, sc.name)
		return old.confirm != sc.confirm
	}
	sc.counted, sc.asked, sc.pods, sc.over = old.counted, old.asked, old.pods, old.over
	b.scopes[sc.name] = sc
	if sc.rule != nil {
		b.byKey[sc.rule.Spec.Taint.Key] = append(b.byKey[sc.rule.Spec.Taint.Key], sc)
	}
	return old.confirm != sc.confirm
}

// count counts what scope would evict now, and reports whether its verdict changed (or it
// was not counted before); under counting, not under mu.
func (b *census) count(name string) (flip bool) {
	now := b.clock.Now()
	all, allAt := b.all, b.allAt // every write holds counting, as count does
	var pods int
	var over bool
	// A scope gone from the stores, and not yet from the census, holds nothing.
	if taints := b.src.scopeTaints(name); taints != nil {
		if allAt.IsZero() || now.Sub(allAt) >= b.period {
			all, allAt = b.src.count(nil, now).pods, now
		}
		pods = b.src.count(taints, now).pods
		over = b.rule.Exceeds(pods, all)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.all, b.allAt = all, allAt
	sc := b.scopes[name]
	if sc == nil {
		return true
	}
	old := *sc
	sc.counted, sc.asked, sc.pods, sc.over = true, false, pods, over
	return !old.counted || old.over != over
}

// release tells flip of scope, if its verdict changed, and of uncountedScope, if it held.
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
	sc := b.scopes[scope]
	if sc == nil || !sc.counted || !sc.over || eviction.Confirms(sc.confirm, key) {
		return "", false
	}
	return fmt.Sprintf("Eviction paused: it would evict %d of the %d pods that use devices, more than %g%%. Annotate the DeviceTaintRule with %s=%s to confirm it.",
		sc.pods, b.all, 100*b.rule.Fraction, eviction.ConfirmAnnotation, key), true
}

// goLive reads and counts every scope, once the caches have synced.
func (b *census) goLive() {
	b.counting.Lock()
	defer b.counting.Unlock()
	for _, r := range b.src.ruleList() {
		b.read(ruleScope(r.Name))
	}
	for _, pool := range b.src.slices.ListIndexFuncValues(PoolIndex) {
		b.read(poolScope(pool))
	}
	for _, sc := range b.names(false) {
		b.release(sc, b.count(sc))
	}
	b.live = true
}

// run counts every scope each period, and those Reach asked about, until ctx is done.
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
			scopes = b.names(false)
		case <-b.kick:
			scopes = b.names(true)
		}
		b.counting.Lock()
		for _, sc := range scopes {
			b.release(sc, b.count(sc))
		}
		b.counting.Unlock()
	}
}

// names returns the names of the scopes (asked: those Reach asked to count), sorted.
func (b *census) names(asked bool) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for name, sc := range b.scopes {
		if sc.asked || !asked {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// poke sends on ch, of capacity 1, without blocking.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
