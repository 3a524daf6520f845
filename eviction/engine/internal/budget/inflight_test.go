package budget

import (
	"slices"
	"testing"
)

// TestInFlight: at most Max evictions in flight; the others wait in line, each its own
// scope, and each end wakes the first in line, once; a woken eviction that another beat
// to the room is first in line again; one that leaves gives its place up.
func TestInFlight(t *testing.T) {
	g := NewGate[uint64](NewInFlight(2, 0, nil))
	admit := func(id uint64, h *Hold) (*Hold, Decision[uint64]) {
		return g.Admit(id, req(id, "ns", "p", 0), h, false)
	}
	for _, id := range []uint64{1, 2} {
		if _, d := admit(id, nil); d.Wait {
			t.Fatalf("%d: got %+v, want it to go: room for 2", id, d)
		}
	}
	var holds [8]*Hold
	for _, id := range []uint64{3, 4, 5, 6} {
		h, d := admit(id, nil)
		if !d.Wait || d.Until != 0 || d.Reason != "InFlight" {
			t.Fatalf("%d: got %+v, want it to wait in line, reported InFlight", id, d)
		}
		holds[id] = h
	}
	if got, want := g.Ended(0), []Woken[uint64]{{Ev: 3}}; !slices.Equal(got, want) {
		t.Fatalf("Ended(1) woke %v, want %v: the first in line, alone", got, want)
	}
	// 4 leaves the line (cancelled); 3 goes.
	g.Release(4, holds[4], 0)
	if _, d := admit(3, holds[3]); d.Wait {
		t.Fatalf("3 woken: got %+v, want it to go", d)
	}
	if got, want := g.Ended(0), []Woken[uint64]{{Ev: 5}}; !slices.Equal(got, want) {
		t.Fatalf("Ended(2) woke %v, want %v: 4 left the line", got, want)
	}
	// A newcomer while 5 is woken and has not asked yet: it waits behind 6.
	h7, d := admit(7, nil)
	if !d.Wait {
		t.Fatalf("7: got %+v, want it to wait: the room is 5's", d)
	}
	holds[7] = h7
	if _, d := admit(5, holds[5]); d.Wait {
		t.Fatalf("5 woken: got %+v, want it to go", d)
	}
	if got, want := g.Ended(0), []Woken[uint64]{{Ev: 6}}; !slices.Equal(got, want) {
		t.Fatalf("Ended(3) woke %v, want %v", got, want)
	}
	if got := g.Ended(0); !slices.Equal(got, []Woken[uint64]{{Ev: 7}}) {
		t.Fatalf("Ended(5) woke %v, want 7 too: room for 2", got)
	}
	for _, id := range []uint64{6, 7} {
		if _, d := admit(id, holds[id]); d.Wait {
			t.Fatalf("%d woken: got %+v, want it to go", id, d)
		}
	}
	if _, d := admit(8, nil); !d.Wait {
		t.Fatalf("8: got %+v, want it to wait: 6 and 7 are in flight", d)
	}
}

// TestInFlightFraction: the bound follows the evictions kept: at least one, and more as
// more are kept; when it grows, the next question wakes those in line that it lets go; when
// it shrinks, one woken that finds no room is first in line again.
func TestInFlightFraction(t *testing.T) {
	kept := 1
	g := NewGate[uint64](NewInFlight(0, 0.5, func() int { return kept }))
	if _, d := g.Admit(1, req(1, "ns", "a", 0), nil, false); d.Wait {
		t.Fatalf("1 of 1 kept: got %+v, want it to go: at least one", d)
	}
	kept = 3
	h2, d := g.Admit(2, req(2, "ns", "b", 0), nil, false)
	if !d.Wait {
		t.Fatalf("2 of 3 kept: got %+v, want it to wait: 0.5 of 3 is 1", d)
	}
	_, d = g.Admit(3, req(3, "ns", "c", 0), nil, false)
	if !d.Wait || len(d.Woken) != 0 {
		t.Fatalf("3 of 3 kept: got %+v, want it to wait behind 2, no one woken", d)
	}
	kept = 4
	_, d = g.Admit(4, req(4, "ns", "d", 0), nil, false)
	if !d.Wait || !slices.Equal(d.Woken, []Woken[uint64]{{Ev: 2}}) {
		t.Fatalf("4 of 4 kept: got %+v, want it to wait, and 2 woken: room for 2", d)
	}
	kept = 2 // 2 is woken, but the bound shrank back to 1 before it asked
	if _, d := g.Admit(2, req(2, "ns", "b", 0), h2, false); !d.Wait || d.Reason != "InFlight" {
		t.Fatalf("2 woken, no room: got %+v, want it to wait again", d)
	}
	kept = 4
	if got, want := g.Ended(0), []Woken[uint64]{{Ev: 2}, {Ev: 3}}; !slices.Equal(got, want) {
		t.Fatalf("Ended(1) woke %v, want %v: 2 first in line again, then 3", got, want)
	}
}

// TestInFlightMemory: tickets that left the line are forgotten, and the line's storage
// does not grow with the evictions that passed through it.
func TestInFlightMemory(t *testing.T) {
	f := NewInFlight(1, 0, nil)
	g := NewGate[uint64](f)
	g.Admit(1, req(1, "ns", "a", 0), nil, false)
	for i := uint64(2); i < 100_000; i++ {
		h, d := g.Admit(i, req(i, "ns", "x", 0), nil, false)
		if !d.Wait {
			t.Fatalf("%d: went, want it to wait", i)
		}
		g.Release(i, h, 0)
	}
	if f.waiting != 0 || cap(f.line) > 4096 {
		t.Errorf("after 100,000 waits that left: %d waiting, a line of %d (capacity %d), want none kept", f.waiting, len(f.line)-f.head, cap(f.line))
	}
}
