package budget

import (
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

func (p *perNamespace) Admit(r *Request, _ any) (Verdict, any) {
	if p.went[r.Key.Namespace] >= p.max {
		return Verdict{Wait: true, Scope: Scope{Kind: 100, Key: r.Key.Namespace}, Reason: "NamespaceFull"}, nil
	}
	p.went[r.Key.Namespace]++
	return Go, nil
}

func (p *perNamespace) Release(any, int64) {}

func req(_ uint64, ns, name string, now int64, causes ...Cause) *Request {
	return &Request{Key: types.NamespacedName{Namespace: ns, Name: name}, Now: now, Causes: causes}
}

// TestGateToyBudget: a budget that is one type, plugged into a gate, holds evictions with
// its own reason and scope, and lets them be asked again on Wake.
func TestGateToyBudget(t *testing.T) {
	g := NewGate[uint64](&perNamespace{max: 1, went: map[string]int{}})
	if _, d := g.Admit(1, req(1, "a", "p1", 0), nil, false); d.Wait {
		t.Fatalf("first of namespace a: got %+v, want it to go", d)
	}
	h, d := g.Admit(2, req(2, "a", "p2", 0), nil, false)
	if !d.Wait || d.Until != 0 || d.Reason != "NamespaceFull" {
		t.Fatalf("second of namespace a: got %+v, want a wait for its scope, reported NamespaceFull", d)
	}
	if _, d := g.Admit(3, req(3, "b", "p1", 0), nil, false); d.Wait {
		t.Fatalf("first of namespace b: got %+v, want it to go", d)
	}
	if got := g.Wake(Scope{Kind: 100, Key: "b"}); len(got) != 0 {
		t.Errorf("Wake(b) = %v, want nothing: b held nothing", got)
	}
	if got, want := g.Wake(Scope{Kind: 100, Key: "a"}), []Woken[uint64]{{Ev: 2, Due: 0}}; !slices.Equal(got, want) {
		t.Errorf("Wake(a) = %v, want %v", got, want)
	}
	if _, d := g.Admit(2, req(2, "a", "p2", 5), h, false); !d.Wait || d.Reason != "NamespaceFull" {
		t.Errorf("asked again: got %+v, want a wait", d)
	}
	g.Release(2, h, 6)
}

// TestGateOrder: the first budget that says wait decides; what a later budget reserved for
// the eviction is given back, so that the token goes to the next eviction.
func TestGateOrder(t *testing.T) {
	const sec = int64(1e9)
	brake := NewBrake(BrakeRules{Fraction: 0.5})
	g := NewGate[uint64](brake, NewTokens(Rate{PerSecond: 1, Burst: 1}, nil, nil))
	key := "node.kubernetes.io/unreachable"
	taint := []v1.Taint{{Key: key, Effect: v1.TaintEffectNoExecute}}
	g.HolderUpdated("n1", "", nil, false)
	g.HolderUpdated("n2", "", taint, false)
	g.HolderUpdated("n3", "", nil, false)
	due := []Cause{{Holder: "n2", Key: key}}
	if _, d := g.Admit(1, req(1, "ns", "a", 0, due...), nil, false); d.Wait {
		t.Fatalf("a: got %+v, want it to take the one token", d)
	}
	hb, d := g.Admit(2, req(2, "ns", "b", 0, due...), nil, false)
	if !d.Wait || d.Until != sec || d.Reason != "RateLimited" {
		t.Fatalf("b: got %+v, want to wait for the next token, at 1 s", d)
	}
	// A second tainted node of three pauses the key (more than half).
	g.HolderUpdated("n1", "", taint, false)
	hb, d = g.Admit(2, req(2, "ns", "b", sec, due...), hb, false)
	if !d.Wait || d.Until != 0 || d.Reason != "Paused" {
		t.Fatalf("b at 1 s: got %+v, want it paused", d)
	}
	// b gave its token back: c takes it, at once.
	if _, d := g.Admit(3, req(3, "other", "c", sec), nil, false); d.Wait {
		t.Errorf("c at 1 s: got %+v, want the token b gave back", d)
	}
	woken := g.HolderUpdated("n1", "", nil, false)
	if want := []Woken[uint64]{{Ev: 2, Due: 0}}; !slices.Equal(woken, want) {
		t.Fatalf("untainting n1 woke %v, want %v", woken, want)
	}
	if _, d := g.Admit(2, req(2, "ns", "b", 2*sec, due...), hb, false); d.Wait {
		t.Errorf("b at 2 s: got %+v, want it to go", d)
	}
}

// TestGateWakeInDeadlineOrder: a released scope wakes what it held earliest due first.
func TestGateWakeInDeadlineOrder(t *testing.T) {
	g := NewGate[uint64](&perNamespace{max: 0, went: map[string]int{}})
	for i, due := range []int64{30, 10, 20} {
		g.Admit(uint64(i+1), req(uint64(i+1), "ns", "x", due), nil, false)
	}
	want := []Woken[uint64]{{Ev: 2, Due: 10}, {Ev: 3, Due: 20}, {Ev: 1, Due: 30}}
	if got := g.Wake(Scope{Kind: 100, Key: "ns"}); !slices.Equal(got, want) {
		t.Errorf("Wake = %v, want %v", got, want)
	}
	if got := g.Wake(Scope{Kind: 100, Key: "ns"}); len(got) != 0 {
		t.Errorf("a second Wake = %v, want nothing", got)
	}
}

// inFlight is a toy Tracker: at most max evictions that went and have not ended.
type inFlight struct {
	max, open int
}

func (f *inFlight) Admit(r *Request, _ any) (Verdict, any) {
	if f.open >= f.max {
		return Verdict{Wait: true, Scope: Scope{Kind: 101}, Reason: "InFlight"}, nil
	}
	return Go, nil
}

func (f *inFlight) Release(any, int64) {}

func (f *inFlight) Went(*Request) { f.open++ }

func (f *inFlight) Ended(_ int64, released []Scope) []Scope {
	f.open--
	return append(released, Scope{Kind: 101})
}

// TestGateTracker: a budget that follows the evictions it let go is told of each that
// went and each that ended, and what it held is woken when one ends.
func TestGateTracker(t *testing.T) {
	f := &inFlight{max: 1}
	g := NewGate[uint64](f)
	if _, d := g.Admit(1, req(1, "ns", "a", 0), nil, false); d.Wait {
		t.Fatalf("a: got %+v, want it to go", d)
	}
	hb, d := g.Admit(2, req(2, "ns", "b", 0), nil, false)
	if !d.Wait || d.Reason != "InFlight" {
		t.Fatalf("b: got %+v, want it held while a is in flight", d)
	}
	if got, want := g.Ended(1), []Woken[uint64]{{Ev: 2, Due: 0}}; !slices.Equal(got, want) {
		t.Fatalf("Ended(a) woke %v, want %v", got, want)
	}
	if _, d := g.Admit(2, req(2, "ns", "b", 2), hb, false); d.Wait {
		t.Errorf("b after a ended: got %+v, want it to go", d)
	}
	if f.open != 1 {
		t.Errorf("in flight: %d, want b alone", f.open)
	}
}
