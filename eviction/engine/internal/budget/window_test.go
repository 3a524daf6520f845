package budget

import (
	"testing"
)

// TestWindow: at most Max evictions of a key within any span of Per; the waiting ones are
// told to come back as the window opens, one opening each, a window later for those after
// the first Max; other keys and evictions without a key are not counted.
func TestWindow(t *testing.T) {
	const sec = int64(1e9)
	w := NewWindow(2, 60*sec, "NamespaceLimit", NamespaceKey)
	g := NewGate[uint64](w)
	for i, at := range []int64{0, 10 * sec} {
		if _, d := g.Admit(uint64(i+1), req(uint64(i+1), "a", "p", at), nil, false); d.Wait {
			t.Fatalf("%d at %ds: got %+v, want it to go", i+1, at/sec, d)
		}
	}
	if _, d := g.Admit(10, req(10, "b", "p", 10*sec), nil, false); d.Wait {
		t.Fatalf("namespace b: got %+v, want it to go: its own window", d)
	}
	var holds []*Hold
	for i, want := range []int64{60, 70, 120, 130} {
		h, d := g.Admit(uint64(i+3), req(uint64(i+3), "a", "p", 20*sec), nil, false)
		if !d.Wait || d.Until != want*sec || d.Reason != "NamespaceLimit" {
			t.Fatalf("waiting %d: got %+v, want to come back at %ds, reported NamespaceLimit", i+1, d, want)
		}
		holds = append(holds, h)
	}
	// At 60 s the first eviction left the window: the first waiting goes, the second is
	// still early.
	if _, d := g.Admit(3, req(3, "a", "p", 60*sec), holds[0], false); d.Wait {
		t.Fatalf("waiting 1 at 60s: got %+v, want it to go", d)
	}
	if _, d := g.Admit(4, req(4, "a", "p", 60*sec), holds[1], false); !d.Wait || d.Until != 70*sec || d.Reason != "NamespaceLimit" {
		t.Fatalf("waiting 2 at 60s: got %+v, want it back at 70s", d)
	}
	if _, d := g.Admit(4, req(4, "a", "p", 70*sec), holds[1], false); d.Wait {
		t.Fatalf("waiting 2 at 70s: got %+v, want it to go", d)
	}
	// The third leaves (cancelled); the fourth goes when its time comes, a window after
	// the first two went.
	g.Release(5, holds[2], 80*sec)
	if _, d := g.Admit(6, req(6, "a", "p", 120*sec), holds[3], false); d.Wait {
		t.Fatalf("waiting 4 at 120s: got %+v, want it to go", d)
	}
}

// TestWindowOwner: an owner's window counts the targets of that owner in its namespace;
// targets without an owner are not counted.
func TestWindowOwner(t *testing.T) {
	g := NewGate[uint64](NewWindow(1, 1e9, "OwnerLimit", OwnerKey))
	web := Owner{Kind: "Deployment", Name: "web"}
	ask := func(id uint64, ns string, o Owner) Decision[uint64] {
		r := req(id, ns, "p", 0)
		r.Owner = o
		_, d := g.Admit(id, r, nil, false)
		return d
	}
	for _, tc := range []struct {
		id    uint64
		ns    string
		owner Owner
		wait  bool
	}{
		{1, "a", web, false},
		{2, "a", web, true},
		{3, "b", web, false},
		{4, "a", Owner{Kind: "Deployment", Name: "api"}, false},
		{5, "a", Owner{}, false},
		{6, "a", Owner{}, false},
	} {
		if d := ask(tc.id, tc.ns, tc.owner); d.Wait != tc.wait {
			t.Errorf("%d (%s, %v): got %+v, want wait %v", tc.id, tc.ns, tc.owner, d, tc.wait)
		}
	}
}

// TestWindowForgets: keys whose window is empty are forgotten, so that a budget per owner
// does not grow with every workload ever evicted.
func TestWindowForgets(t *testing.T) {
	w := NewWindow(1, 10, "OwnerLimit", OwnerKey)
	g := NewGate[uint64](w)
	for i := range 10_000 {
		r := req(uint64(i), "ns", "p", int64(i)*100)
		r.Owner = Owner{Kind: "Job", Name: string(rune('a' + i%26))}
		if _, d := g.Admit(uint64(i), r, nil, false); d.Wait {
			t.Fatalf("%d: waits", i)
		}
	}
	if len(w.keys) > 1 {
		t.Errorf("after 10,000 evictions each alone in its window: %d keys kept, want at most 1", len(w.keys))
	}
}

// TestWindowOwnerChangesWhileWaiting: a target waiting at its owner's window whose owner
// changes (its pod released by one controller and adopted by another) or goes (released,
// with no controller left) leaves the old owner's line, and is asked as a new one; the old
// owner's later waits are placed as if it had never waited.
func TestWindowOwnerChangesWhileWaiting(t *testing.T) {
	const sec = int64(1e9)
	a, b := Owner{Kind: "ReplicaSet", Name: "a"}, Owner{Kind: "ReplicaSet", Name: "b"}
	for _, tc := range []struct {
		name     string
		newOwner Owner
	}{
		{"adopted by an owner never seen", b},
		{"released: no owner", Owner{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWindow(1, 60*sec, "OwnerLimit", OwnerKey)
			g := NewGate[uint64](w)
			ask := func(id uint64, o Owner, at int64, h *Hold) (*Hold, Decision[uint64]) {
				r := req(id, "ns", "p", at)
				r.Owner = o
				return g.Admit(id, r, h, false)
			}
			if _, d := ask(1, a, 0, nil); d.Wait {
				t.Fatalf("a's first: got %+v, want it to go", d)
			}
			h, d := ask(2, a, sec, nil)
			if !d.Wait {
				t.Fatalf("a's second: got %+v, want it to wait", d)
			}
			if _, d := ask(2, tc.newOwner, 2*sec, h); d.Wait {
				t.Fatalf("asked again under its new owner: got %+v, want it to go", d)
			}
			// Later, a's window holds one eviction again: the next waits one window, not two.
			if _, d := ask(3, a, 200*sec, nil); d.Wait {
				t.Fatalf("a's third: got %+v, want it to go", d)
			}
			if _, d := ask(4, a, 201*sec, nil); !d.Wait || d.Until != 260*sec {
				t.Errorf("a's fourth: got %+v, want it to wait until 260s", d)
			}
		})
	}
}

// TestWindowForgetsReleasedWaiter: a key whose only waiting eviction is released, with its
// window empty, is forgotten.
func TestWindowForgetsReleasedWaiter(t *testing.T) {
	const sec = int64(1e9)
	w := NewWindow(1, 60*sec, "NamespaceLimit", NamespaceKey)
	g := NewGate[uint64](w)
	g.Admit(1, req(1, "a", "p", 0), nil, false)
	h, d := g.Admit(2, req(2, "a", "p", sec), nil, false)
	if !d.Wait {
		t.Fatalf("second: got %+v, want it to wait", d)
	}
	g.Admit(3, req(3, "b", "p", 61*sec), nil, false) // a's window empties; looked at, kept for its waiter
	g.Release(2, h, 62*sec)
	if _, kept := w.keys[Key{Namespace: "a"}]; kept {
		t.Errorf("key a kept after its window emptied and its waiter left; want it forgotten")
	}
}
