package engine_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
	"github.com/taintevict/taintevict/tolerations"
)

// synced tells e that it has been told of every holder and every target its Source has, as
// a caller does once its informers have synced. It is the one place the tests of this
// package say so.
func synced(e *engine.Engine[engine.Target]) { e.Synced() }

// unreachableKey is the taint key of a node the node lifecycle controller cannot reach.
const unreachableKey = v1.TaintNodeUnreachable

// TestBudgetsHoldAfterRestart: an Engine started in the middle of an outage, and fed its
// holders and targets as informers feed a new leader (in any order, each processed before
// the next arrives), acts on nothing while the Brake's rule, or Confirm's, holds for the
// outage in the Source. 6 of 10 holders were tainted unreachable 10 minutes ago, and the
// targets tolerate that for 300 s: long past due, and nothing cushions it. The former
// Engine held them; the new one must too, whatever the order of its updates, once it has
// been told that it has seen everything (synced); until then it lets nothing through.
func TestBudgetsHoldAfterRestart(t *testing.T) {
	orders := []struct {
		name  string
		order []string // "h3": holder h3's update; "t3": target t3's
	}{
		{"targets first", append(seq("t", 0, 10), seq("h", 0, 10)...)},
		{"each target before its holder", interleave(seq("t", 0, 10), seq("h", 0, 10))},
		{"healthy holders first", append(seq("h", 6, 10), interleave(seq("h", 0, 6), seq("t", 0, 10))...)},
		{"tainted holders last", append(interleave(seq("h", 6, 10), seq("t", 0, 10)), seq("h", 0, 6)...)},
	}
	budgets := []struct {
		name   string
		opts   func(c *toldCensus) engine.Options
		reason engine.Reason
	}{
		{"Brake", func(*toldCensus) engine.Options { return engine.Options{Brake: engine.Brake{Fraction: 0.5}} }, engine.ReasonPaused},
		{"Confirm", func(c *toldCensus) engine.Options {
			return engine.Options{Confirm: engine.Confirm{Fraction: 0.5, Census: c}}
		}, engine.ReasonUnconfirmed},
	}
	for _, b := range budgets {
		for _, o := range orders {
			t.Run(b.name+"/"+o.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					clk := testclock.NewFakeClock(t0)
					src := &evictiontest.Source{}
					census := &toldCensus{}
					for i := range 10 {
						h := engine.Holder{Name: fmt.Sprint("h", i)}
						if i < 6 {
							h.Taints = []v1.Taint{taint(unreachableKey, t0.Add(-10*time.Minute))}
						}
						src.SetHolder(h)
						src.SetTarget(engine.Target{Key: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("t", i)},
							UID: types.UID(fmt.Sprint("t", i)), Bindings: []engine.Binding{{Holder: h.Name, Tolerations: []v1.Toleration{tolFor(unreachableKey, 300)}}}})
					}
					act := &actCalls{}
					opts := b.opts(census)
					opts.Clock = clk
					e := startEngine(t, engine.ActuatorFunc(act.act), src, opts) // Run first, as a Controller does
					census.recount = e.Recounted
					for _, name := range o.order {
						if name[0] == 'h' {
							h, _, _ := src.Holder(name)
							census.holderUpdated(h)
							e.HolderUpdated(h)
						} else {
							tg, _, _ := src.Target(types.NamespacedName{Namespace: "ns", Name: name})
							census.targetUpdated(tg)
							e.TargetUpdated(tg)
						}
						synctest.Wait() // processed before the next update arrives
					}
					synced(e)
					synctest.Wait()
					clk.Step(time.Minute)
					synctest.Wait()
					if got := act.calls(); len(got) != 0 {
						t.Errorf("acted on %v while the %s's rule holds for the outage in the Source (6 of 10 holders), want none", got, b.name)
					}
					var held []string
					for _, p := range e.Pending() {
						if p.Delayed == b.reason {
							held = append(held, p.Target.Name)
						}
					}
					if want := seq("t", 0, 6); !slices.Equal(held, want) {
						t.Errorf("held %v with %s, want %v; pending %v", held, b.reason, want, e.Pending())
					}
					// 4 of 10 holders tainted: the rule lets go, and what it held goes.
					// Both holders in the Source before either is told: Confirm lets go at 5
					// of 10 already, and t1 would go if h1 were still tainted then.
					for _, name := range seq("h", 0, 2) {
						src.SetHolder(engine.Holder{Name: name})
					}
					for _, name := range seq("h", 0, 2) {
						h := engine.Holder{Name: name}
						census.holderUpdated(h)
						e.HolderUpdated(h)
					}
					synctest.Wait()
					var got []string
					for _, uid := range act.calls() {
						got = append(got, string(uid))
					}
					slices.Sort(got)
					if want := seq("t", 2, 6); !slices.Equal(got, want) {
						t.Errorf("held, then released with 4 of 10 holders tainted: acted on %v in all, want %v", got, want)
					}
				})
			})
		}
	}
}

// seq returns prefix+i for i in [from, to).
func seq(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprint(prefix, i))
	}
	return out
}

// interleave returns a[0], b[0], a[1], b[1]... then the rest of the longer.
func interleave(a, b []string) []string {
	var out []string
	for i := 0; i < len(a) || i < len(b); i++ {
		if i < len(a) {
			out = append(out, a[i])
		}
		if i < len(b) {
			out = append(out, b[i])
		}
	}
	return out
}

// toldCensus is a Census for Confirm that counts what it is told, as a caller's census
// counts what its informers' handlers see (eviction.Manager's does so): each taint key is
// a scope, which would evict the targets told of, not leaving, bound to a holder told of
// that carries it and that they do not tolerate forever, of all targets told of. It tells
// recount of every change of its counts.
type toldCensus struct {
	recount func(scope string)

	mu      sync.Mutex
	holders map[string][]v1.Taint
	targets map[types.NamespacedName]engine.Target
}

var _ engine.Census = (*toldCensus)(nil)

func (c *toldCensus) holderUpdated(h engine.Holder) {
	c.mu.Lock()
	if c.holders == nil {
		c.holders = map[string][]v1.Taint{}
	}
	c.holders[h.Name] = tolerations.NoExecuteTaints(h.Taints)
	c.mu.Unlock()
	c.changed()
}

func (c *toldCensus) targetUpdated(t engine.Target) {
	c.mu.Lock()
	if c.targets == nil {
		c.targets = map[types.NamespacedName]engine.Target{}
	}
	c.targets[t.Key] = t
	c.mu.Unlock()
	c.changed()
}

func (c *toldCensus) changed() {
	if c.recount != nil {
		c.recount(unreachableKey)
	}
}

// Reach counts the cause's key.
func (c *toldCensus) Reach(cause engine.Cause, into []engine.Reach) []engine.Reach {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := engine.Reach{Scope: cause.Key, Counted: true}
	for _, t := range c.targets {
		if t.Leaving != "" || len(t.Bindings) == 0 {
			continue
		}
		r.Targets++
		if evictedBy(cause.Key, t.Bindings, c.holders) {
			r.Evicts++
		}
	}
	return append(into, r)
}

// evictedBy reports whether a taint with key on one of the holders of bindings is not
// tolerated forever by that binding.
func evictedBy(key string, bindings []engine.Binding, taints map[string][]v1.Taint) bool {
	for _, b := range bindings {
		for i, tn := range taints[b.Holder] {
			if tn.Key == key && tolerations.Deadline(taints[b.Holder][i:i+1], b.Tolerations, time.Time{}, time.Time{}, tolerations.Options{}).Verdict != tolerations.Stay {
				return true
			}
		}
	}
	return false
}
