package budget

import (
	"slices"
	"testing"
)

// TestDamping: a target re-created under an owner just evicted waits its backoff, longer
// for each re-created target in a row; the owner's other targets (created before), those
// of other owners, those without an owner or a creation time go; after window without an
// eviction the count starts again.
func TestDamping(t *testing.T) {
	const sec = int64(1e9)
	delay := func(n int, _ float64) int64 { return int64(n) * 10 * sec } // 10 s, 20 s, 30 s, ...
	g := NewGate[uint64](NewDamping(300*sec, delay))
	web := Owner{Kind: "Deployment", Name: "web"}
	ask := func(id uint64, owner Owner, created, now int64, h *Hold) (*Hold, Decision[uint64]) {
		r := req(id, "ns", "p", now)
		r.Owner, r.Created = owner, created
		return g.Admit(id, r, h, false)
	}
	steps := []struct {
		name          string
		id            uint64
		owner         Owner
		created, at   int64
		wantWait      bool
		wantUntil     int64
		againAt       int64 // when waiting: asked again then, and goes
		otherOwnerToo bool
	}{
		{name: "the first eviction of web", id: 1, owner: web, created: 1, at: 100 * sec},
		{name: "a replica of web created before it", id: 2, owner: web, created: 50 * sec, at: 101 * sec},
		{name: "a pod re-created a moment after", id: 3, owner: web, created: 102 * sec, at: 103 * sec, wantWait: true, wantUntil: 111 * sec, againAt: 111 * sec},
		{name: "re-created again: twice as long", id: 4, owner: web, created: 112 * sec, at: 112 * sec, wantWait: true, wantUntil: 131 * sec, againAt: 131 * sec},
		{name: "created within a second before the eviction counts as re-created", id: 5, owner: web, created: 131*sec - sec/2, at: 132 * sec, wantWait: true, wantUntil: 161 * sec, againAt: 161 * sec},
		{name: "another owner", id: 6, owner: Owner{Kind: "StatefulSet", Name: "db"}, created: 161 * sec, at: 162 * sec},
		{name: "no owner", id: 7, created: 161 * sec, at: 162 * sec},
		{name: "no creation time", id: 8, owner: web, at: 162 * sec},
		{name: "re-created after the span (the 4th backoff, 40 s, then the window): the count starts again", id: 9, owner: web, created: 510 * sec, at: 510 * sec},
		{name: "re-created right after that one: the first wait again", id: 10, owner: web, created: 511 * sec, at: 511 * sec, wantWait: true, wantUntil: 520 * sec, againAt: 520 * sec},
	}
	for _, st := range steps {
		h, d := ask(st.id, st.owner, st.created, st.at, nil)
		if d.Wait != st.wantWait || d.Until != st.wantUntil || st.wantWait && d.Reason != "Recreated" {
			t.Fatalf("%s: got %+v, want wait %v until %ds, reported Recreated", st.name, d, st.wantWait, st.wantUntil/sec)
		}
		if !st.wantWait {
			continue
		}
		if _, d := ask(st.id, st.owner, st.created, st.againAt-1, h); !d.Wait || d.Until != st.wantUntil {
			t.Fatalf("%s, asked again early: got %+v, want the same wait", st.name, d)
		}
		if _, d := ask(st.id, st.owner, st.created, st.againAt, h); d.Wait {
			t.Fatalf("%s, asked again at %ds: got %+v, want it to go", st.name, st.againAt/sec, d)
		}
	}
}

// TestDampingForgets: owners with no eviction within the window are forgotten.
func TestDampingForgets(t *testing.T) {
	d := NewDamping(10, func(int, float64) int64 { return 1 })
	g := NewGate[uint64](d)
	for i := range 10_000 {
		r := req(uint64(i), "ns", "p", int64(i)*100)
		r.Owner, r.Created = Owner{Kind: "Job", Name: string(rune('a' + i%26))}, 1
		g.Admit(uint64(i), r, nil, false)
	}
	if len(d.owners) > 1 {
		t.Errorf("after 10,000 evictions each alone in its window: %d owners kept, want at most 1", len(d.owners))
	}
}

// TestDampingBackoffLongerThanWindow: a workload whose pod is re-created a second after
// each eviction waits a backoff that keeps doubling up to its cap, even once the backoff is
// longer than the window (a backoff measured against the window alone would start the
// count again after each long wait).
func TestDampingBackoffLongerThanWindow(t *testing.T) {
	const sec = int64(1e9)
	delay := func(n int, _ float64) int64 { return min(int64(10)<<(n-1), 300) * sec } // 10, 20, 40, ... up to 300 s
	g := NewGate[uint64](NewDamping(60*sec, delay))
	owner := Owner{Kind: "DaemonSet", Name: "agent"}
	now := int64(100 * sec)
	var got []int64
	for id := uint64(1); id <= 8; id++ {
		created := now
		r := req(id, "ns", "agent", now)
		r.Owner, r.Created = owner, created
		h, d := g.Admit(id, r, nil, false)
		if d.Wait {
			got = append(got, (d.Until-now)/sec)
			now = d.Until
			r = req(id, "ns", "agent", now)
			r.Owner, r.Created = owner, created
			if _, d := g.Admit(id, r, h, false); d.Wait {
				t.Fatalf("pod %d, asked again at its time: got %+v, want it to go", id, d)
			}
		}
		now += sec // re-created a second after its eviction
	}
	want := []int64{9, 19, 39, 79, 159, 299, 299}
	if !slices.Equal(got, want) {
		t.Errorf("got waits %v s, want %v s", got, want)
	}
}
