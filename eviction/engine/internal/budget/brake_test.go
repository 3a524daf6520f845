package budget

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// testHolder is a holder as the brake counts it.
type testHolder struct {
	Name, Group string
	Taints      []v1.Taint
}

// brakeConfig is what NewBrake takes.
type brakeConfig = BrakeRules

func newBrake(c brakeConfig) *Brake { return NewBrake(c) }

func brakeHolder(name, group string, keys ...string) testHolder {
	h := testHolder{Name: name, Group: group}
	for _, k := range keys {
		h.Taints = append(h.Taints, v1.Taint{Key: k, Effect: v1.TaintEffectNoExecute})
	}
	return h
}

// setHolder counts h, as HolderUpdated does.
func setHolder(b *Brake, h testHolder, resumed []Scope) []Scope {
	return b.HolderUpdated(h.Name, h.Group, h.Taints, false, resumed)
}

// pausedBy asks whether evictions caused by keys on a holder of group are paused.
func pausedBy(b *Brake, group string, keys []string) (Scope, bool) {
	causes := make([]Cause, len(keys))
	for i, k := range keys {
		causes[i] = Cause{Key: k, Group: group}
	}
	v, _ := b.Admit(&Request{Causes: causes}, nil)
	return v.Scope, v.Wait
}

// brakeStep changes the brake's nodes, then checks what is paused and what resumed.
type brakeStep struct {
	do          func(b *Brake, resumed []Scope) []Scope
	wantResumed []Scope
	paused      []brakeQuery // queries that must be paused, with the scope that pauses them
	running     []brakeQuery // queries that must not be paused
}

type brakeQuery struct {
	zone  string
	keys  []string
	scope Scope // for paused queries
}

// setNodes sets nodes name-from..name-(to-1) in zone with keys.
func setNodes(from, to int, zone string, keys ...string) func(*Brake, []Scope) []Scope {
	return func(b *Brake, resumed []Scope) []Scope {
		for i := from; i < to; i++ {
			resumed = setHolder(b, brakeHolder(fmt.Sprintf("%s-%d", zone, i), zone, keys...), resumed)
		}
		return resumed
	}
}

func removeNodes(from, to int, zone string) func(*Brake, []Scope) []Scope {
	return func(b *Brake, resumed []Scope) []Scope {
		for i := from; i < to; i++ {
			resumed = b.HolderUpdated(fmt.Sprintf("%s-%d", zone, i), "", nil, true, resumed)
		}
		return resumed
	}
}

const (
	keyU = "node.kubernetes.io/unreachable"
	keyM = "example.com/maintenance"
)

func TestBrake(t *testing.T) {
	all := func(key string) Scope { return Scope{Kind: KindBrake, Key: key} }
	inZone := func(zone, key string) Scope { return Scope{Kind: KindBrake, Key: key, Group: zone, Grouped: true} }
	tests := []struct {
		name  string
		brake brakeConfig
		steps []brakeStep
	}{
		{"the issue's case: 60 of 100 tainted with F=0.55 pause; untainting 10 resumes, once", brakeConfig{Fraction: 0.55}, []brakeStep{
			{do: setNodes(0, 100, "a"), running: []brakeQuery{{keys: []string{keyU}}}},
			{do: setNodes(0, 55, "a", keyU), running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
			{do: setNodes(55, 60, "a", keyU), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: all(keyU)}}},
			{do: setNodes(50, 60, "a"), wantResumed: []Scope{all(keyU)}, running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
		}},
		{"at exactly the fraction the brake stays as it was", brakeConfig{Fraction: 0.5}, []brakeStep{
			{do: setNodes(0, 10, "a", keyU), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: all(keyU)}}},
			{do: setNodes(0, 5, "a"), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: all(keyU)}}},
			{do: setNodes(5, 6, "a"), wantResumed: []Scope{all(keyU)}},
			{do: setNodes(0, 1, "a", keyU), running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
		}},
		{"new healthy nodes resume, deleting them pauses again", brakeConfig{Fraction: 0.5}, []brakeStep{
			{do: setNodes(0, 6, "a", keyU), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: all(keyU)}}},
			{do: setNodes(0, 7, "b"), wantResumed: []Scope{all(keyU)}, running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
			{do: removeNodes(0, 2, "b"), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: all(keyU)}}},
		}},
		{"deleting the tainted nodes resumes", brakeConfig{Fraction: 0.5}, []brakeStep{
			{do: setNodes(0, 3, "a", keyU), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: all(keyU)}}},
			{do: removeNodes(0, 3, "a"), wantResumed: []Scope{all(keyU)}},
			{do: removeNodes(0, 3, "a")}, // unknown nodes: nothing
		}},
		{"a zone rule pauses one zone and not the other", brakeConfig{GroupFraction: 0.5}, []brakeStep{
			{do: setNodes(0, 10, "a"), running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
			{do: setNodes(0, 10, "b")},
			{do: setNodes(0, 6, "a", keyU), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: inZone("a", keyU)}},
				running: []brakeQuery{{zone: "b", keys: []string{keyU}}}},
			{do: setNodes(0, 2, "a"), wantResumed: []Scope{inZone("a", keyU)}, running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
		}},
		{"the cluster rule and the zone rule together", brakeConfig{Fraction: 0.9, GroupFraction: 0.5}, []brakeStep{
			{do: setNodes(0, 4, "a", keyU), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: all(keyU)}}},
			{do: setNodes(0, 4, "b"), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: inZone("a", keyU)}},
				running: []brakeQuery{{zone: "b", keys: []string{keyU}}}, wantResumed: []Scope{all(keyU)}},
		}},
		{"each key has its own count; a pod due for two keys waits while either is paused", brakeConfig{Fraction: 0.5}, []brakeStep{
			{do: setNodes(0, 6, "a", keyU), paused: []brakeQuery{{zone: "a", keys: []string{keyM, keyU}, scope: all(keyU)}}},
			{do: setNodes(6, 10, "a", keyM), running: []brakeQuery{{zone: "a", keys: []string{keyM}}},
				paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: all(keyU)}}},
		}},
		{"a node counts once per key, whatever its taints of that key", brakeConfig{Fraction: 0.5}, []brakeStep{
			{do: setNodes(0, 2, "a")},
			{do: setNodes(2, 4, "a", keyU, keyU), running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
		}},
		{"a floor: at least 2 of a zone's nodes pause, whatever the fraction", brakeConfig{GroupHolders: 2}, []brakeStep{
			{do: setNodes(0, 100, "a"), running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
			{do: setNodes(0, 1, "a", keyU), running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
			{do: setNodes(1, 2, "a", keyU), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: inZone("a", keyU)}}},
			{do: setNodes(0, 1, "a"), wantResumed: []Scope{inZone("a", keyU)}, running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
		}},
		{"a floor of all holders, with a fraction that would not pause", brakeConfig{Fraction: 0.9, Holders: 3}, []brakeStep{
			{do: setNodes(0, 10, "a")},
			{do: setNodes(0, 10, "b")},
			{do: setNodes(0, 2, "a", keyU), running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
			{do: setNodes(0, 1, "b", keyU), paused: []brakeQuery{{zone: "b", keys: []string{keyU}, scope: all(keyU)}}},
			{do: removeNodes(0, 1, "b"), wantResumed: []Scope{all(keyU)}},
		}},
		{"a small pool: the fraction trips at 2 of 3, the floor at 1", brakeConfig{GroupFraction: 0.55, GroupHolders: 1}, []brakeStep{
			{do: setNodes(0, 3, "a")},
			{do: setNodes(0, 1, "a", keyU), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: inZone("a", keyU)}}},
		}},
		{"full disruption pauses a zone all of whose nodes carry the key", brakeConfig{FullPause: true}, []brakeStep{
			{do: setNodes(0, 3, "a")},
			{do: setNodes(0, 2, "a", keyU), running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
			{do: setNodes(2, 3, "a", keyU), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: inZone("a", keyU)}}},
			{do: setNodes(3, 4, "a"), wantResumed: []Scope{inZone("a", keyU)}, running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
		}},
		{"full disruption with a rate: the zone's fraction does not hold it, the fleet's does", brakeConfig{Fraction: 0.9, GroupFraction: 0.5, FullRate: Rate{PerSecond: 1, Burst: 1}}, []brakeStep{
			{do: setNodes(0, 3, "a")},
			{do: setNodes(0, 3, "b")},
			{do: setNodes(0, 2, "a", keyU), paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: inZone("a", keyU)}}},
			{do: setNodes(2, 3, "a", keyU), wantResumed: []Scope{inZone("a", keyU)}, running: []brakeQuery{{zone: "a", keys: []string{keyU}}}},
			{do: setNodes(0, 3, "b", keyU), wantResumed: []Scope{inZone("b", keyU)}, paused: []brakeQuery{{zone: "a", keys: []string{keyU}, scope: all(keyU)}}},
		}},
		{"nodes without a zone form a zone of their own", brakeConfig{GroupFraction: 0.5}, []brakeStep{
			{do: setNodes(0, 4, ""), running: []brakeQuery{{keys: []string{keyU}}}},
			{do: setNodes(0, 3, "", keyU), paused: []brakeQuery{{keys: []string{keyU}, scope: inZone("", keyU)}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBrake(tt.brake)
			for i, st := range tt.steps {
				resumed := st.do(b, nil)
				if !slices.Equal(resumed, st.wantResumed) {
					t.Errorf("step %d: resumed %v, want %v", i+1, resumed, st.wantResumed)
				}
				for _, q := range st.paused {
					if got, ok := pausedBy(b, q.zone, q.keys); !ok || got != q.scope {
						t.Errorf("step %d: paused(%q, %v) = %v, %v; want %v, true", i+1, q.zone, q.keys, got, ok, q.scope)
					}
				}
				for _, q := range st.running {
					if got, ok := pausedBy(b, q.zone, q.keys); ok {
						t.Errorf("step %d: paused(%q, %v) = %v, true; want false", i+1, q.zone, q.keys, got)
					}
				}
			}
		})
	}
}

func TestBrakeZoneChange(t *testing.T) {
	b := newBrake(brakeConfig{GroupFraction: 0.5})
	setNodes(0, 2, "a", keyU)(b, nil)
	setNodes(0, 2, "b")(b, nil)
	if _, ok := pausedBy(b, "a", []string{keyU}); !ok {
		t.Fatalf("zone a: not paused with 2 of 2 nodes tainted")
	}
	moved := brakeHolder("a-0", "b", keyU) // relabelled into zone b: 1 of 3 nodes there
	if resumed := setHolder(b, moved, nil); len(resumed) != 0 {
		t.Errorf("after moving a-0 to zone b: resumed %v, want none (a-1 is still 1 of 1 in zone a)", resumed)
	}
	if _, ok := pausedBy(b, "b", []string{keyU}); ok {
		t.Errorf("zone b paused with 1 of 3 nodes tainted")
	}
	if got, want := b.zones["a"].holders, 1; got != want {
		t.Errorf("zone a: %d nodes, want %d", got, want)
	}
	if got, want := b.zones["b"].keys[keyU].n, 1; got != want {
		t.Errorf("zone b: %d nodes with %s, want %d", got, keyU, want)
	}
}

func TestBrakeIgnoresOtherEffects(t *testing.T) {
	b := newBrake(brakeConfig{Fraction: 0.5})
	n := brakeHolder("n", "")
	n.Taints = []v1.Taint{{Key: keyU, Effect: v1.TaintEffectNoSchedule}}
	setHolder(b, n, nil)
	if _, ok := pausedBy(b, "", []string{keyU}); ok {
		t.Errorf("a NoSchedule taint paused evictions")
	}
}

// TestBrakeUnchangedNodeAllocatesNothing: most node updates are status changes, and the
// brake sees every one of them.
func TestBrakeUnchangedNodeAllocatesNothing(t *testing.T) {
	b := newBrake(brakeConfig{Fraction: 0.5, GroupFraction: 0.5})
	n := brakeHolder("n", "a", keyU, keyM)
	setHolder(b, n, nil)
	if got := testing.AllocsPerRun(100, func() { b.HolderUpdated(n.Name, n.Group, n.Taints, false, nil) }); got != 0 {
		t.Errorf("an update of an unchanged node: %v allocations, want 0", got)
	}
}

// TestBrakeFullRate: the evictions of a fully disrupted zone take a token of the zone's own
// bucket as well, and only while the zone is fully disrupted.
func TestBrakeFullRate(t *testing.T) {
	const sec = int64(1e9)
	b := NewBrake(BrakeRules{FullRate: Rate{PerSecond: 1, Burst: 1}})
	g := NewGate[uint64](b, NewTokens(Rate{}, nil, b))
	taint := []v1.Taint{{Key: keyU, Effect: v1.TaintEffectNoExecute}}
	g.HolderUpdated("a-0", "a", taint, false)
	g.HolderUpdated("a-1", "a", taint, false)
	g.HolderUpdated("b-0", "b", taint, false)
	g.HolderUpdated("b-1", "b", nil, false)
	inA := []Cause{{Holder: "a-0", Key: keyU, Group: "a"}}
	inB := []Cause{{Holder: "b-0", Key: keyU, Group: "b"}}
	for i, want := range []int64{0, sec, 2 * sec} {
		_, d := g.Admit(uint64(i+1), req(uint64(i+1), "ns", fmt.Sprint("a", i), 0, inA...), nil, false)
		if d.Wait != (want > 0) || d.Until != want {
			t.Errorf("zone a, eviction %d: got %+v, want a slot at %ds", i+1, d, want/sec)
		}
	}
	for i := range 3 {
		if _, d := g.Admit(uint64(i+10), req(uint64(i+10), "ns", fmt.Sprint("b", i), 0, inB...), nil, false); d.Wait {
			t.Errorf("zone b (1 of 2 tainted), eviction %d: got %+v, want it to go: no rate of its own", i+1, d)
		}
	}
	g.HolderUpdated("a-2", "a", nil, false) // zone a no longer fully disrupted
	if _, d := g.Admit(20, req(20, "ns", "a9", 0, inA...), nil, false); d.Wait {
		t.Errorf("zone a, 2 of 3 tainted: got %+v, want it to go", d)
	}
}
