package budget

import "math"

// InFlight is the budget of the evictions in flight: let go by the gate and not yet ended
// (see [Tracker]). At most max are in
// flight at once, and at most fraction of the evictions the engine keeps (kept: those
// open, running or acted on and not yet gone), at least one; the evictions due meanwhile
// wait in a queue, in the order they first asked, and each end lets the first in line go.
//
// A waiting eviction waits for a scope of its own (KindInFlight, its ticket in Seq), so
// that an end wakes the one eviction it lets go rather than every one that waits. Each
// question costs O(1), an end O(1) amortized. Make it with NewInFlight.
type InFlight struct {
	max      int        // 0: no count limit
	fraction float64    // 0: no fraction limit
	kept     func() int // the evictions the engine keeps, for fraction; O(1)

	open    int                // the evictions in flight
	tickets map[uint64]*ticket // the waiting evictions, by their ticket
	queue   []uint64           // tickets in line, oldest first; those gone are skipped
	head    int                // queue[head:] is the line
	front   []uint64           // tickets woken that found no room: first in line, newest last
	next    uint64             // the next ticket
	woken   int                // tickets woken that have not asked again yet
}

// ticket is a waiting eviction's place in line: the state the gate keeps for it.
type ticket struct {
	seq    uint64
	woken  bool // woken, and has not asked again yet
	inLine bool // in queue or front, not yet woken
}

// NewInFlight returns the budget of at most max evictions in flight (0: no such limit) and
// at most fraction of kept() (0: no such limit); nil when neither limits anything.
func NewInFlight(max int, fraction float64, kept func() int) *InFlight {
	if max <= 0 && fraction <= 0 {
		return nil
	}
	return &InFlight{max: max, fraction: fraction, kept: kept, tickets: map[uint64]*ticket{}}
}

// NeedsCauses reports false: the count is over every eviction.
func (f *InFlight) NeedsCauses() bool { return false }

// limit is how many may be in flight now.
func (f *InFlight) limit() int {
	l := math.MaxInt
	if f.max > 0 {
		l = f.max
	}
	if f.fraction > 0 {
		l = min(l, max(1, int(f.fraction*float64(f.kept()))))
	}
	return l
}

// Admit lets the eviction go while there is room and no one waits before it; otherwise it
// takes a ticket and waits for its scope.
func (f *InFlight) Admit(_ *Request, state any) (Verdict, any) {
	if t, ok := state.(*ticket); ok {
		if t.woken {
			t.woken = false
			f.woken--
		}
		if t.inLine {
			return f.wait(t) // asked again before its turn
		}
		if f.open+f.woken < f.limit() {
			delete(f.tickets, t.seq)
			return Go, nil
		}
		t.inLine = true // woken and beaten to the room: first in line again
		f.front = append(f.front, t.seq)
		return f.wait(t)
	}
	if f.open+f.woken < f.limit() && len(f.tickets) == f.woken { // no one in line
		return Go, nil
	}
	t := &ticket{seq: f.next, inLine: true}
	f.next++
	f.tickets[t.seq] = t
	f.queue = append(f.queue, t.seq)
	return f.wait(t)
}

func (f *InFlight) wait(t *ticket) (Verdict, any) {
	return Verdict{Wait: true, Scope: Scope{Kind: KindInFlight, Seq: t.seq}, Reason: "InFlight"}, t
}

// Release forgets the ticket of an eviction that left without going.
func (f *InFlight) Release(state any, _ int64) {
	t := state.(*ticket)
	if t.woken {
		f.woken--
	}
	delete(f.tickets, t.seq) // its place in line is skipped
	if n := len(f.queue) - f.head; n > 64 && n > 2*len(f.tickets) {
		// Mostly places given up: keep those still in line, so that the line's storage
		// follows the evictions that wait, not all that ever waited.
		live := f.queue[:0]
		for _, seq := range f.queue[f.head:] {
			if t := f.tickets[seq]; t != nil && t.inLine {
				live = append(live, seq)
			}
		}
		clear(f.queue[len(live):])
		f.queue, f.head = live, 0
	}
}

// Went counts the eviction in flight.
func (f *InFlight) Went(*Request) { f.open++ }

// Ended takes an eviction out of flight; Refill, which the gate calls next, lets the first
// in line go.
func (f *InFlight) Ended(_ int64, released []Scope) []Scope {
	f.open--
	return released
}

// Refill wakes the first in line while there is room.
func (f *InFlight) Refill(released []Scope) []Scope {
	if len(f.tickets) == f.woken {
		return released // no one in line: the common case, without asking kept
	}
	for room := f.limit() - f.open - f.woken; room > 0; room-- {
		t := f.pop()
		if t == nil {
			break
		}
		t.inLine, t.woken = false, true
		f.woken++
		released = append(released, Scope{Kind: KindInFlight, Seq: t.seq})
	}
	return released
}

// pop takes the first ticket in line, if any: the newest of front, then the oldest of the
// queue, skipping those that left.
func (f *InFlight) pop() *ticket {
	for len(f.front) > 0 {
		seq := f.front[len(f.front)-1]
		f.front = f.front[:len(f.front)-1]
		if t := f.tickets[seq]; t != nil && t.inLine {
			return t
		}
	}
	for f.head < len(f.queue) {
		seq := f.queue[f.head]
		f.head++
		if f.head == len(f.queue) || f.head > 1024 && f.head*2 > len(f.queue) {
			f.queue, f.head = append(f.queue[:0], f.queue[f.head:]...), 0
		}
		if t := f.tickets[seq]; t != nil && t.inLine {
			return t
		}
	}
	return nil
}
