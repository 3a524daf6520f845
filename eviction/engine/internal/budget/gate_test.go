package budget

import (
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// perNamespace is a toy budget, written here to show what adding one takes: this type and
// nothing else in the package. At most max evictions of each namespace go, ever.
type perNamespace struct {
	max  int
	went map[string]int
}

func (p *perNamespace) NeedsCauses() bool { return false }

func (p *perNamespace) Admit(r *Request, _ any) (Verdict, any) {
	if p.went[r.Key.Namespace] >= p.max {
		return Verdict{Wait: true, Scope: Scope{Kind: 100, Key: r.Key.Namespace}, Reason: "NamespaceFull"}, nil
	}
	p.went[r.Key.Namespace]++
	return Go, nil
}

func (p *perNamespace) Release(any, int64) {}

func req(id uint64, ns, name string, now int64, causes ...Cause) *Request {
	return &Request{ID: id, Key: types.NamespacedName{Namespace: ns, Name: name}, Now: now, Causes: causes}
}

// TestGateToyBudget: a budget that is one type, plugged into a gate, holds evictions with
// its own reason and scope, is counted in Delayed, and lets them be asked again on Wake.
func TestGateToyBudget(t *testing.T) {
	g := NewGate(&perNamespace{max: 1, went: map[string]int{}})
	if _, d := g.Admit(req(1, "a", "p1", 0), nil); d.Wait {
		t.Fatalf("first of namespace a: got %+v, want it to go", d)
	}
	h, d := g.Admit(req(2, "a", "p2", 0), nil)
	if !d.Wait || d.Until != 0 || d.Report != "NamespaceFull" {
		t.Fatalf("second of namespace a: got %+v, want a wait for its scope, reported NamespaceFull", d)
	}
	if _, d := g.Admit(req(3, "b", "p1", 0), nil); d.Wait {
		t.Fatalf("first of namespace b: got %+v, want it to go", d)
	}
	if got, want := g.Delayed(), map[string]int{"NamespaceFull": 1}; !maps.Equal(got, want) {
		t.Errorf("Delayed() = %v, want %v", got, want)
	}
	if got := g.Wake(Scope{Kind: 100, Key: "b"}); len(got) != 0 {
		t.Errorf("Wake(b) = %v, want nothing: b held nothing", got)
	}
	if got, want := g.Wake(Scope{Kind: 100, Key: "a"}), []Woken{{ID: 2, Due: 0}}; !slices.Equal(got, want) {
		t.Errorf("Wake(a) = %v, want %v", got, want)
	}
	if _, d := g.Admit(req(2, "a", "p2", 5), h); !d.Wait || d.Report != "" {
		t.Errorf("asked again: got %+v, want a wait, not reported again", d)
	}
	g.Release(2, h, 6)
	if got := g.Delayed(); len(got) != 0 {
		t.Errorf("Delayed() after the release = %v, want none", got)
	}
}

// TestGateOrder: the first budget that says wait decides; what a later budget reserved for
// the eviction is given back, so that the token goes to the next eviction.
func TestGateOrder(t *testing.T) {
	const sec = int64(1e9)
	brake := NewBrake(BrakeRules{Fraction: 0.5})
	g := NewGate(brake, NewTokens(Rate{PerSecond: 1, Burst: 1}, nil, nil))
	key := "node.kubernetes.io/unreachable"
	taint := []v1.Taint{{Key: key, Effect: v1.TaintEffectNoExecute}}
	g.HolderUpdated("n1", "", nil, false)
	g.HolderUpdated("n2", "", taint, false)
	g.HolderUpdated("n3", "", nil, false)
	due := []Cause{{Holder: "n2", Key: key}}
	if _, d := g.Admit(req(1, "ns", "a", 0, due...), nil); d.Wait {
		t.Fatalf("a: got %+v, want it to take the one token", d)
	}
	hb, d := g.Admit(req(2, "ns", "b", 0, due...), nil)
	if !d.Wait || d.Until != sec || d.Report != "RateLimited" {
		t.Fatalf("b: got %+v, want to wait for the next token, at 1 s", d)
	}
	// A second tainted node of three pauses the key (more than half).
	g.HolderUpdated("n1", "", taint, false)
	hb, d = g.Admit(req(2, "ns", "b", sec, due...), hb)
	if !d.Wait || d.Until != 0 || d.Report != "Paused" {
		t.Fatalf("b at 1 s: got %+v, want it paused", d)
	}
	if got, want := g.Delayed(), map[string]int{"Paused": 1}; !maps.Equal(got, want) {
		t.Errorf("Delayed() = %v, want %v", got, want)
	}
	// b gave its token back: c takes it, at once.
	if _, d := g.Admit(req(3, "other", "c", sec), nil); d.Wait {
		t.Errorf("c at 1 s: got %+v, want the token b gave back", d)
	}
	woken := g.HolderUpdated("n1", "", nil, false)
	if want := []Woken{{ID: 2, Due: 0}}; !slices.Equal(woken, want) {
		t.Fatalf("untainting n1 woke %v, want %v", woken, want)
	}
	if _, d := g.Admit(req(2, "ns", "b", 2*sec, due...), hb); d.Wait {
		t.Errorf("b at 2 s: got %+v, want it to go", d)
	}
	if got := g.Delayed(); len(got) != 0 {
		t.Errorf("Delayed() = %v, want none", got)
	}
}

// TestGateWakeInDeadlineOrder: a released scope wakes what it held earliest due first.
func TestGateWakeInDeadlineOrder(t *testing.T) {
	p := Pauser{Paused: func(*Request) (string, bool) { return "rule", true }}
	g := NewGate(p)
	for i, due := range []int64{30, 10, 20} {
		g.Admit(req(uint64(i+1), "ns", "x", due), nil)
	}
	want := []Woken{{ID: 2, Due: 10}, {ID: 3, Due: 20}, {ID: 1, Due: 30}}
	if got := g.Wake(PauserScope("rule")); !slices.Equal(got, want) {
		t.Errorf("Wake = %v, want %v", got, want)
	}
	if got := g.Wake(PauserScope("rule")); len(got) != 0 {
		t.Errorf("a second Wake = %v, want nothing", got)
	}
}

// inFlight is a toy Tracker: at most max evictions that went and have not ended.
type inFlight struct {
	max  int
	open map[uint64]bool
}

func (f *inFlight) NeedsCauses() bool { return false }

func (f *inFlight) Admit(r *Request, _ any) (Verdict, any) {
	if len(f.open) >= f.max {
		return Verdict{Wait: true, Scope: Scope{Kind: 101}, Reason: "InFlight"}, nil
	}
	return Go, nil
}

func (f *inFlight) Release(any, int64) {}

func (f *inFlight) Went(r *Request) { f.open[r.ID] = true }

func (f *inFlight) Ended(id uint64, _ int64, released []Scope) []Scope {
	if f.open[id] {
		delete(f.open, id)
		released = append(released, Scope{Kind: 101})
	}
	return released
}

// TestGateTracker: a budget that follows the evictions it let go is told of each that
// went and each that ended, and what it held is woken when one ends.
func TestGateTracker(t *testing.T) {
	f := &inFlight{max: 1, open: map[uint64]bool{}}
	g := NewGate(f)
	if _, d := g.Admit(req(1, "ns", "a", 0), nil); d.Wait {
		t.Fatalf("a: got %+v, want it to go", d)
	}
	hb, d := g.Admit(req(2, "ns", "b", 0), nil)
	if !d.Wait || d.Report != "InFlight" {
		t.Fatalf("b: got %+v, want it held while a is in flight", d)
	}
	if got := g.Ended(3, 1); len(got) != 0 {
		t.Errorf("Ended of an eviction that never went woke %v", got)
	}
	if got, want := g.Ended(1, 1), []Woken{{ID: 2, Due: 0}}; !slices.Equal(got, want) {
		t.Fatalf("Ended(a) woke %v, want %v", got, want)
	}
	if _, d := g.Admit(req(2, "ns", "b", 2), hb); d.Wait {
		t.Errorf("b after a ended: got %+v, want it to go", d)
	}
	if !f.open[2] || f.open[1] {
		t.Errorf("in flight: %v, want b alone", f.open)
	}
}
