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

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// Budget is the guard kubernetes#141422 asks for, against a DeviceTaintRule (or a driver's
// taints) that would evict every pod that uses a device: a scope, that is a
// DeviceTaintRule, or the taints of one pool's ResourceSlices, pauses instead of evicting
// while it would evict more than a fraction of the pods that use devices, in all or in one
// namespace. The zero Budget pauses nothing.
//
// "Would evict" counts the pods as the rule's status counts its pending pods: scheduled,
// not leaving, bound to a device the scope taints with tolerations that let one of its
// NoExecute taints run out. A paused scope's evictions wait (the engine reports them
// Delayed with engine.ReasonPaused, Pending lists them so, a paused rule's status has the
// reason [ReasonEvictionPaused] and says why) until the scope falls under the fraction:
// its counts are read again at each status period and at each change of the rule or the
// pool, before the engine hears of the change. An eviction that another taint, not paused,
// makes due goes. An eviction due by a taint whose scope has not been counted yet (its
// rule or slice arrived a moment ago) waits until it has been.
type Budget struct {
	// Fraction pauses a scope that would evict more than this fraction of all the pods
	// that use devices. 0 means no such rule; otherwise it must be in (0, 1].
	Fraction float64
	// NamespaceFraction pauses a scope that would evict more than this fraction of the
	// pods that use devices in any one namespace. 0 means no such rule; otherwise it must
	// be in (0, 1].
	NamespaceFraction float64
	// MinPods: a scope that would evict fewer pods (in all, or in the namespace) never
	// pauses, so that a small cluster or namespace can lose its few pods. 0 means 1.
	MinPods int
}

func (b Budget) on() bool { return b.Fraction > 0 || b.NamespaceFraction > 0 }

func (b Budget) validate() error {
	for _, f := range []float64{b.Fraction, b.NamespaceFraction} {
		if f != 0 && !(f > 0 && f <= 1) {
			return fmt.Errorf("device: Budget fractions must be 0 (off) or in (0, 1]: got %v", f)
		}
	}
	if b.MinPods < 0 {
		return fmt.Errorf("device: Budget.MinPods must not be negative: got %d", b.MinPods)
	}
	return nil
}

// The scopes a budget pauses, by name: these are the scopes of engine.Engine.Resume.
func ruleScope(name string) string { return "DeviceTaintRule " + name }
func poolScope(pool string) string { return "pool " + pool }

// uncountedScope holds the evictions due by a taint that the budget has not yet seen come
// from a rule or a slice: the informers' stores have it, the handler that tells the budget
// has not run yet. The budget resumes it each time it has caught up.
const uncountedScope = "budget: counting"

// budget is the engine.Pauser of a Budget. Paused only reads what was decided: the scopes
// of each taint and each scope's verdict, kept from the informers' handlers (before the
// engine hears of a change), the period's recount and the counts Paused asked for, all
// made off the engine's locks (see run). It resumes a scope that no longer pauses.
//
// Locks: counting orders the updates (a handler's and run's) and is held while counting;
// mu guards the maps, and is all Paused takes. Order: Source.feed, counting, mu; resume is
// called holding counting, never mu.
type budget struct {
	Budget
	src    *Source
	clock  clock.Clock
	period time.Duration
	resume func(scope string)
	kick   chan struct{} // wakes run: Paused met a scope that was not counted
	// flipped, if not nil, is told of each scope that now pauses, or no longer does; under
	// counting.
	flipped func(scope string)

	counting sync.Mutex
	live     bool // under counting and mu: every scope was counted once the caches synced

	mu        sync.Mutex
	verdicts  map[string]verdict             // by scope: the rules of effect NoExecute and the pools with NoExecute taints
	all       verdict                        // the pods that use devices, in all (tally only)
	rules     map[string][]ruleSelector      // the NoExecute rules, by their taint's key
	pools     map[string]map[string][]string // the NoExecute taints' keys of the pool's devices: pool -> device -> keys
	uncounted map[string]bool                // scopes Paused held, with no verdict
	heldNew   bool                           // Paused held evictions under uncountedScope
}

// ruleSelector is what the budget keeps of a NoExecute rule: its scope and its selector.
type ruleSelector struct {
	scope string
	rule  *resourcev1.DeviceTaintRule // from the store: read only
}

type verdict struct {
	at     time.Time
	t      tally
	paused bool
	why    string
}

var _ engine.Pauser = (*budget)(nil)

func newBudget(b Budget, src *Source, clk clock.Clock, period time.Duration, resume func(scope string)) *budget {
	return &budget{Budget: b, src: src, clock: clk, period: period, resume: resume, kick: make(chan struct{}, 1),
		verdicts: map[string]verdict{}, rules: map[string][]ruleSelector{}, pools: map[string]map[string][]string{}, uncounted: map[string]bool{}}
}

// Paused holds the eviction of target when every cause is a taint of paused scopes only.
// It reads only what the budget keeps (no store, no count): O(causes, and the rules of each
// cause's key). A scope that has no verdict yet holds the eviction until run has counted
// it; a cause of no scope known yet holds it under uncountedScope until the handler that
// brings its rule or slice has run.
func (b *budget) Paused(_ engine.Ref, causes []engine.Cause) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	held := ""
	for _, c := range causes {
		live, known := false, false
		b.scopesOf(c.Holder, c.Key, func(sc string) bool {
			known = true
			v, ok := b.verdicts[sc]
			switch {
			case !ok:
				b.uncounted[sc] = true
				b.wake()
				if held == "" {
					held = sc
				}
			case !v.paused:
				live = true
				return false
			case held == "":
				held = sc
			}
			return true
		})
		if !known {
			b.heldNew = true
			if held == "" {
				held = uncountedScope
			}
			continue
		}
		if live {
			return "", false
		}
	}
	return held, held != ""
}

// scopesOf calls f with each scope that puts a NoExecute taint with key on device id, as
// the budget knows them, until f returns false; under mu.
func (b *budget) scopesOf(id, key string, f func(scope string) bool) {
	driver, pool, name := splitID(id)
	if slices.Contains(b.pools[driver+"/"+pool][name], key) && !f(poolScope(driver+"/"+pool)) {
		return
	}
	for _, r := range b.rules[key] {
		if ruleMatches(r.rule, id) && !f(r.scope) {
			return
		}
	}
}

func (b *budget) wake() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
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

// changed is the Source's news, before the engine hears it, that the taints of scope
// changed in the stores: the budget reads the scope again (the rule, or the pool's slices)
// and, once live, counts it afresh (what it decided before does not hold: a scope at
// exactly the fraction resumes), then resumes it unless it pauses, and resumes what it held
// for want of a scope.
func (b *budget) changed(scope string) {
	b.counting.Lock()
	defer b.counting.Unlock()
	b.read(scope)
	if b.live {
		b.count(scope, false)
	}
	b.release(scope)
}

// read takes what the stores say of scope's taints into the budget; under counting.
func (b *budget) read(scope string) {
	if pool, ok := strings.CutPrefix(scope, poolScope("")); ok {
		devices := map[string][]string{}
		b.src.pool(pool, func(name string, taints []resourcev1.DeviceTaint) {
			for _, t := range taints {
				if t.Effect == resourcev1.DeviceTaintEffectNoExecute && !slices.Contains(devices[name], t.Key) {
					devices[name] = append(devices[name], t.Key)
				}
			}
		})
		b.mu.Lock()
		if len(devices) == 0 {
			delete(b.pools, pool)
			delete(b.verdicts, scope)
		} else {
			b.pools[pool] = devices
		}
		b.mu.Unlock()
		return
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
		delete(b.verdicts, scope)
		return
	}
	key := rule.Spec.Taint.Key
	b.rules[key] = append(b.rules[key], ruleSelector{scope: scope, rule: rule})
}

// count decides about scope from a count of what it would evict now, and keeps the verdict;
// keep says whether a scope at exactly the fraction stays paused (a recount), or not (a
// change). It counts the pods that use devices first when that count is older than the
// period. It returns whether scope pauses. Under counting; not under mu.
func (b *budget) count(scope string, keep bool) bool {
	now := b.clock.Now()
	b.mu.Lock()
	all, was := b.all, b.verdicts[scope].paused && keep
	_, known := b.verdicts[scope]
	delete(b.uncounted, scope)
	b.mu.Unlock()
	taints := b.src.scopeTaints(scope)
	if taints == nil {
		// Gone from the stores, not yet from the budget (its handler is on the way): it
		// pauses nothing, so that Paused does not ask again and again.
		if known || b.knows(scope) {
			b.mu.Lock()
			b.verdicts[scope] = verdict{at: now}
			b.mu.Unlock()
		}
		return false
	}
	if all.at.IsZero() || now.Sub(all.at) >= b.period {
		all = verdict{at: now, t: b.src.count(nil, now)}
	}
	nv := verdict{at: now, t: b.src.count(taints, now)}
	nv.paused, nv.why = b.judge(nv.t, all.t, was)
	b.mu.Lock()
	flip := b.verdicts[scope].paused != nv.paused
	b.all, b.verdicts[scope] = all, nv
	b.mu.Unlock()
	if flip && b.flipped != nil {
		b.flipped(scope)
	}
	return nv.paused
}

// knows reports whether the budget keeps scope's taints.
func (b *budget) knows(scope string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if pool, ok := strings.CutPrefix(scope, poolScope("")); ok {
		return b.pools[pool] != nil
	}
	for _, rs := range b.rules {
		if slices.ContainsFunc(rs, func(r ruleSelector) bool { return r.scope == scope }) {
			return true
		}
	}
	return false
}

// release resumes scope unless it pauses, and what Paused held for want of a scope; under
// counting.
func (b *budget) release(scope string) {
	b.mu.Lock()
	v, ok := b.verdicts[scope]
	held := b.heldNew
	b.heldNew = false
	b.mu.Unlock()
	if !ok || !v.paused {
		b.resume(scope)
	}
	if held {
		b.resume(uncountedScope)
	}
}

// judge decides from what a scope would evict, t, of all: more than the fraction pauses,
// fewer resumes, and exactly the fraction keeps what was (so that it does not flap).
func (b *budget) judge(t, all tally, was bool) (bool, string) {
	over := func(n, total int, f float64) bool {
		limit := f * float64(total)
		return f > 0 && n >= max(b.MinPods, 1) && (float64(n) > limit || was && float64(n) == limit)
	}
	if over(t.pods, all.pods, b.Fraction) {
		return true, fmt.Sprintf("Eviction paused: it would evict %d of the %d pods that use devices, more than %g%%.", t.pods, all.pods, 100*b.Fraction)
	}
	for ns, n := range t.namespaces {
		if total := all.namespaces[ns]; over(n, total, b.NamespaceFraction) {
			return true, fmt.Sprintf("Eviction paused: it would evict %d of the %d pods that use devices in namespace %s, more than %g%%.", n, total, ns, 100*b.NamespaceFraction)
		}
	}
	return false, ""
}

// why returns the message of a paused scope, and whether it is paused, as last counted. A
// nil budget pauses nothing.
func (b *budget) why(scope string) (string, bool) {
	if b == nil {
		return "", false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	v := b.verdicts[scope]
	return v.why, v.paused
}

// goLive reads every scope from the stores and counts it: the caches have synced, and the
// handlers did not count before. Lead calls it before the engine runs.
func (b *budget) goLive() {
	b.counting.Lock()
	defer b.counting.Unlock()
	for _, sc := range b.scopes(true) {
		b.read(sc)
	}
	for _, sc := range b.scopes(false) {
		b.count(sc, false)
	}
	b.mu.Lock()
	b.live = true
	b.mu.Unlock()
}

// run keeps the verdicts until ctx is done: it counts every scope again at each period,
// and those Paused asked about when it asks, and resumes each that does not pause.
func (b *budget) run(ctx context.Context) {
	next := b.clock.NewTimer(b.period)
	defer func() { next.Stop() }()
	for {
		var scopes []string
		select {
		case <-ctx.Done():
			return
		case <-next.C():
			next = b.clock.NewTimer(b.period)
			scopes = b.scopes(false)
		case <-b.kick:
			b.mu.Lock()
			for sc := range b.uncounted {
				scopes = append(scopes, sc)
			}
			b.mu.Unlock()
		}
		b.counting.Lock()
		for _, sc := range scopes {
			b.count(sc, true)
			b.release(sc)
		}
		b.counting.Unlock()
	}
}

// scopes lists the scopes the budget knows (fromStores: those of the stores, every rule and
// every pool, to read them).
func (b *budget) scopes(fromStores bool) []string {
	var out []string
	if fromStores {
		for _, r := range b.src.ruleList() {
			out = append(out, ruleScope(r.Name))
		}
		for _, pool := range b.src.slices.ListIndexFuncValues(PoolIndex) {
			out = append(out, poolScope(pool))
		}
		return out
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, rs := range b.rules {
		for _, r := range rs {
			out = append(out, r.scope)
		}
	}
	for pool := range b.pools {
		out = append(out, poolScope(pool))
	}
	slices.Sort(out)
	return out
}
