package device

import (
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
// pool. An eviction that another taint, not paused, makes due goes.
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

// budget is the engine.Pauser of a Budget: it decides from verdicts about each scope, kept
// for a period, and resumes a scope that no longer pauses.
type budget struct {
	Budget
	src    *Source
	clock  clock.PassiveClock
	period time.Duration
	resume func(scope string)

	mu       sync.Mutex
	verdicts map[string]verdict
	all      verdict // the pods that use devices, in all (tally only)
}

type verdict struct {
	at     time.Time
	t      tally
	paused bool
	why    string
}

var _ engine.Pauser = (*budget)(nil)

// Paused holds the eviction of target when every cause is a taint of paused scopes only.
// The engine runs only once the informers have synced (see Controller.Lead), so the counts
// are of the whole cluster.
func (b *budget) Paused(_ engine.Ref, causes []engine.Cause) (string, bool) {
	now := b.clock.Now()
	held := ""
	for _, c := range causes {
		scopes := b.src.scopesOf(c.Holder, c.Key)
		live := len(scopes) == 0
		for _, sc := range scopes {
			if v := b.verdict(sc, now, false); !v.paused {
				live = true
			} else if held == "" {
				held = sc
			}
		}
		if live {
			return "", false
		}
	}
	return held, held != ""
}

// scopesOf names the scopes that put a NoExecute taint with key on device id.
func (s *Source) scopesOf(id, key string) []string {
	var out []string
	st, _ := s.sliceTaints(id)
	if slices.ContainsFunc(st, func(t resourcev1.DeviceTaint) bool {
		return t.Key == key && t.Effect == resourcev1.DeviceTaintEffectNoExecute
	}) {
		out = append(out, poolScope(poolOf(id)))
	}
	for _, r := range s.ruleList() {
		if r.Spec.Taint.Key == key && r.Spec.Taint.Effect == resourcev1.DeviceTaintEffectNoExecute && ruleMatches(r, id) {
			out = append(out, ruleScope(r.Name))
		}
	}
	return out
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

// verdict returns scope's verdict, read again when older than the period, or when fresh.
func (b *budget) verdict(scope string, now time.Time, fresh bool) verdict {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.verdicts[scope]
	if ok && !fresh && now.Sub(v.at) < b.period {
		return v
	}
	if fresh || b.all.at.IsZero() || now.Sub(b.all.at) >= b.period {
		b.all = verdict{at: now, t: b.src.count(nil, now)}
	}
	nv := verdict{at: now}
	if taints := b.src.scopeTaints(scope); taints != nil {
		nv.t = b.src.count(taints, now)
		nv.paused, nv.why = b.judge(nv.t, v.paused)
	}
	b.verdicts[scope] = nv
	return nv
}

// judge decides from what a scope would evict, t: more than the fraction pauses, fewer
// resumes, and exactly the fraction keeps what was (so that it does not flap).
func (b *budget) judge(t tally, was bool) (bool, string) {
	over := func(n, total int, f float64) bool {
		limit := f * float64(total)
		return f > 0 && n >= max(b.MinPods, 1) && (float64(n) > limit || was && float64(n) == limit)
	}
	if over(t.pods, b.all.t.pods, b.Fraction) {
		return true, fmt.Sprintf("Eviction paused: it would evict %d of the %d pods that use devices, more than %g%%.", t.pods, b.all.t.pods, 100*b.Fraction)
	}
	for ns, n := range t.namespaces {
		if total := b.all.t.namespaces[ns]; over(n, total, b.NamespaceFraction) {
			return true, fmt.Sprintf("Eviction paused: it would evict %d of the %d pods that use devices in namespace %s, more than %g%%.", n, total, ns, 100*b.NamespaceFraction)
		}
	}
	return false, ""
}

// why returns the message of a paused scope, and whether it is paused. A nil budget
// pauses nothing.
func (b *budget) why(scope string) (string, bool) {
	if b == nil {
		return "", false
	}
	v := b.verdict(scope, b.clock.Now(), false)
	return v.why, v.paused
}

// changed forgets what was decided about scope, whose taints changed, and resumes it, so
// that the engine asks again about the evictions it holds.
func (b *budget) changed(scope string) {
	b.mu.Lock()
	delete(b.verdicts, scope)
	b.mu.Unlock()
	b.resume(scope)
}

// recheck reads every paused scope again, and resumes those that no longer pause.
func (b *budget) recheck() {
	now := b.clock.Now()
	var paused []string
	b.mu.Lock()
	for scope, v := range b.verdicts {
		if v.paused {
			paused = append(paused, scope)
		}
	}
	b.mu.Unlock()
	for _, scope := range paused {
		if !b.verdict(scope, now, true).paused {
			b.resume(scope)
		}
	}
}
