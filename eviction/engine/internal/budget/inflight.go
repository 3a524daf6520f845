package budget

import "math"

// InFlight is the engine's InFlight: at most max evictions let go by the gate and not yet
// ended (see [Tracker]), and at most fraction of the evictions the engine keeps, at least
// one. Those due meanwhile wait in line, in the order they first asked, each for a scope of
// its own (its ticket in Seq), so that an end wakes the one eviction it lets go, not every
// one that waits. A question costs O(1), an end O(1) amortized. Make it with NewInFlight.
type InFlight struct {
	max      int        // 0: no count limit
	fraction float64    // 0: no fraction limit
	kept     func() int // the evictions the engine keeps, for fraction; O(1)

	open    int       // the evictions in flight
	woken   int       // tickets woken that have not asked again yet
	waiting int       // tickets in line
	line    []*ticket // in line from head on, first first; those that left are skipped
	head    int
	seq     uint64 // the last ticket's number
}

// ticket is a waiting eviction's place: the state the gate keeps for it.
type ticket struct {
	seq    uint64
	inLine bool // in line, not yet woken
	woken  bool // woken, and has not asked again yet
}

// NewInFlight returns the budget of at most max evictions in flight (0: no such limit) and
// at most fraction of kept() (0: no such limit); nil when neither limits anything.
func NewInFlight(max int, fraction float64, kept func() int) *InFlight {
	if max <= 0 && fraction <= 0 {
		return nil
	}
	return &InFlight{max: max, fraction: fraction, kept: kept}
}

// room returns how many more may go now.
func (f *InFlight) room() int {
	l := math.MaxInt
	if f.max > 0 {
		l = f.max
	}
	if f.fraction > 0 {
		l = min(l, max(1, int(f.fraction*float64(f.kept()))))
	}
	return l - f.open - f.woken
}

// Admit lets the eviction go while there is room and no one waits before it; otherwise it
// waits in line.
func (f *InFlight) Admit(_ *Request, state any) (Verdict, any) {
	t, _ := state.(*ticket)
	if t != nil && t.woken {
		t.woken = false
		f.woken--
	}
	switch {
	case t != nil && t.inLine: // asked again before its turn
	case t != nil && f.room() > 0, t == nil && f.waiting == 0 && f.room() > 0:
		return Go, nil
	case t != nil: // woken, and beaten to the room: first in line again
		t.inLine = true
		f.waiting++
		if f.head > 0 {
			f.head--
			f.line[f.head] = t
		} else {
			f.line = append([]*ticket{t}, f.line...)
		}
	default:
		f.seq++
		t = &ticket{seq: f.seq, inLine: true}
		f.waiting++
		f.line = append(f.line, t)
	}
	return Verdict{Wait: true, Scope: Scope{Kind: KindInFlight, Seq: t.seq}, Reason: "InFlight"}, t
}

// Release gives up the eviction's place: it is skipped when its turn comes.
func (f *InFlight) Release(state any, _ int64) {
	t := state.(*ticket)
	if t.woken {
		f.woken--
	}
	if t.inLine {
		f.waiting--
	}
	t.inLine, t.woken = false, false
	f.compact()
}

// compact keeps only those in line once the places left or given up are most of the line,
// so that its storage follows the evictions that wait, not all that ever waited.
func (f *InFlight) compact() {
	if len(f.line) <= 64 || len(f.line) <= 2*f.waiting {
		return
	}
	live := make([]*ticket, 0, f.waiting)
	for _, t := range f.line[f.head:] {
		if t.inLine {
			live = append(live, t)
		}
	}
	f.line, f.head = live, 0
}

// Went counts the eviction in flight.
func (f *InFlight) Went(*Request) { f.open++ }

// Ended takes an eviction out of flight; Refill, called next, lets the first in line go.
func (f *InFlight) Ended(_ int64, released []Scope) []Scope {
	f.open--
	return released
}

// Refill wakes the first in line while there is room.
func (f *InFlight) Refill(released []Scope) []Scope {
	if f.waiting == 0 {
		return released // the common case, without asking kept
	}
	for room := f.room(); room > 0 && f.waiting > 0; {
		t := f.line[f.head]
		f.line[f.head] = nil
		f.head++
		if !t.inLine {
			continue // it left the line
		}
		t.inLine, t.woken = false, true
		f.waiting--
		f.woken++
		room--
		released = append(released, Scope{Kind: KindInFlight, Seq: t.seq})
	}
	f.compact()
	return released
}
