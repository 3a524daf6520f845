package budget

import "testing"

// TestDamping: a target re-created under an owner just evicted waits its backoff, longer
// for each re-created target in a row; the owner's other targets (created before), those
// of other owners, those without an owner or a creation time go; after window without an
// eviction the count starts again.
func TestDamping(t *testing.T) {
	const sec = int64(1e9)
	delay := func(n int) int64 { return int64(n) * 10 * sec } // 10 s, 20 s, 30 s, ...
	g := NewGate(NewDamping(300*sec, delay))
	web := Owner{Kind: "Deployment", Name: "web"}
	ask := func(id uint64, owner Owner, created, now int64, h *Hold) (*Hold, Decision) {
		r := req(id, "ns", "p", now)
		r.Owner, r.Created = owner, created
		return g.Admit(r, h)
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
		{name: "re-created after the window: the count starts again", id: 9, owner: web, created: 470 * sec, at: 470 * sec},
		{name: "re-created right after that one: the first wait again", id: 10, owner: web, created: 471 * sec, at: 471 * sec, wantWait: true, wantUntil: 480 * sec, againAt: 480 * sec},
	}
	for _, st := range steps {
		h, d := ask(st.id, st.owner, st.created, st.at, nil)
		if d.Wait != st.wantWait || d.Until != st.wantUntil || st.wantWait && d.Report != "Recreated" {
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
	d := NewDamping(10, func(int) int64 { return 1 })
	g := NewGate(d)
	for i := range 10_000 {
		r := req(uint64(i), "ns", "p", int64(i)*100)
		r.Owner, r.Created = Owner{Kind: "Job", Name: string(rune('a' + i%26))}, 1
		g.Admit(r, nil)
	}
	if len(d.owners) > 1 {
		t.Errorf("after 10,000 evictions each alone in its window: %d owners kept, want at most 1", len(d.owners))
	}
}
