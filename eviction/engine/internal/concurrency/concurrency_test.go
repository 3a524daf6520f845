package concurrency

import (
	"cmp"
	"container/heap"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// server is what the simulated API server and client do from some time on.
type server struct {
	// knee is the calls in flight at which the server's throughput stops rising; latency
	// is a call's latency below it. Above the knee the throughput stays knee/latency, and
	// each call waits its turn (latency × inflight/knee).
	knee    int
	latency time.Duration
	// refuseAbove is the calls in flight past which the server refuses a call at once, for
	// load (a 429); 0 means never.
	refuseAbove int
	// qps, if not 0, is a client-side rate limiter (a token bucket with burst): each call
	// first waits for a token.
	qps   float64
	burst int
}

// capacity is the server's most calls a second (the client's limiter left aside).
func (s server) capacity() float64 { return float64(s.knee) / s.latency.Seconds() }

// change is a server that takes over at a time.
type change struct {
	at time.Duration
	server
}

// sim runs a Limit against a simulated server on a simulated clock: calls are always
// waiting (a mass eviction's backlog), and whenever fewer than the limit are in flight,
// another starts. Every latency is jittered by ±10% (a seeded random source).
type sim struct {
	t0, now  time.Time
	l        *Limit
	limit    int
	inflight int
	pending  events
	rng      *rand.Rand
	tokens   float64
	tokensAt time.Time

	// What happened, by the simulated second.
	served, refused []int
	peak            []int // the most calls in flight
	limits          []int // the limit at the end of the second
}

type event struct {
	at      time.Time
	call    Call
	outcome Outcome
}

type events []event

func (e events) Len() int           { return len(e) }
func (e events) Less(i, j int) bool { return e[i].at.Before(e[j].at) }
func (e events) Swap(i, j int)      { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)        { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// run simulates d from the start, the server changing as changes say (the first at 0),
// for a Limit made by New(fixed, floor, ceil).
func run(t *testing.T, fixed, floor, ceil int, changes []change, d time.Duration) *sim {
	t.Helper()
	s := &sim{t0: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), rng: rand.New(rand.NewPCG(1, 2))}
	s.now, s.tokensAt = s.t0, s.t0
	s.tokens = float64(changes[0].burst)
	s.l = New(fixed, floor, ceil, func(n int) int { s.limit = n; return n })
	seconds := int(d / time.Second)
	s.served, s.refused, s.peak, s.limits = make([]int, seconds), make([]int, seconds), make([]int, seconds), make([]int, seconds)
	cur := 0
	for {
		for cur+1 < len(changes) && s.now.Sub(s.t0) >= changes[cur+1].at {
			cur++
		}
		srv := changes[cur].server
		for s.inflight < s.limit {
			s.start(srv)
		}
		ev := heap.Pop(&s.pending).(event)
		if ev.at.Sub(s.t0) >= d {
			return s
		}
		s.now = ev.at
		sec := int(s.now.Sub(s.t0) / time.Second)
		s.inflight--
		s.l.End(ev.call, s.now, ev.outcome)
		if ev.outcome == Overloaded {
			s.refused[sec]++
		} else {
			s.served[sec]++
		}
		s.limits[sec] = s.limit
	}
}

// start begins a call now on srv.
func (s *sim) start(srv server) {
	call := s.l.Begin(s.now)
	s.inflight++
	sec := int(s.now.Sub(s.t0) / time.Second)
	if sec < len(s.peak) {
		s.peak[sec] = max(s.peak[sec], s.inflight)
	}
	jitter := func(d time.Duration) time.Duration { return time.Duration(float64(d) * (0.9 + 0.2*s.rng.Float64())) }
	var wait time.Duration
	if srv.qps > 0 { // client-go's token bucket: take a token, into debt, and wait it out
		s.tokens = min(float64(srv.burst), s.tokens+s.now.Sub(s.tokensAt).Seconds()*srv.qps)
		s.tokensAt = s.now
		s.tokens--
		if s.tokens < 0 {
			wait = time.Duration(-s.tokens / srv.qps * float64(time.Second))
		}
	}
	ev := event{call: call, outcome: Done}
	switch {
	case srv.refuseAbove > 0 && s.inflight > srv.refuseAbove:
		ev.outcome = Overloaded
		ev.at = s.now.Add(wait + jitter(srv.latency/10))
	default:
		lat := srv.latency
		if s.inflight > srv.knee {
			lat = time.Duration(float64(lat) * float64(s.inflight) / float64(srv.knee))
		}
		ev.at = s.now.Add(wait + jitter(lat))
	}
	heap.Push(&s.pending, ev)
}

// rate is the calls served a second over seconds [from, to), which must not be empty.
func (s *sim) rate(from, to int) float64 {
	if from >= to {
		panic(fmt.Sprintf("no seconds to measure: [%d, %d)", from, to))
	}
	n := 0
	for _, c := range s.served[from:to] {
		n += c
	}
	return float64(n) / float64(to-from)
}

// refusedShare is the share of the calls refused over seconds [from, to).
func (s *sim) refusedShare(from, to int) float64 {
	served, refused := 0, 0
	for i := from; i < to; i++ {
		served += s.served[i]
		refused += s.refused[i]
	}
	return float64(refused) / float64(max(1, served+refused))
}

// TestLimitFindsTheKnee runs a Limit against simulated servers whose throughput rises with
// the calls in flight up to a knee and stays flat beyond it while latency grows, and which
// refuse calls for load past a second point; some change their capacity midway, down or
// up. In each period of a constant server (after a time to settle) the Limit must serve
// within 10% of what the server or the client's rate limiter allows, refuse at most 1% of
// the calls, and not sit far past the knee.
func TestLimitFindsTheKnee(t *testing.T) {
	const floor, ceil = 8, 512
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		changes []change
		// settle is how long the Limit may take to find each period's knee.
		settle time.Duration
		// most is the highest limit allowed once settled, in each period.
		most []int
		// period is how long each server stays as it is: 0 means 30 s.
		period time.Duration
	}{
		{
			name:    "knee at 40, refusals past 100",
			changes: []change{{0, server{knee: 40, latency: 20 * ms, refuseAbove: 100}}},
			settle:  5 * time.Second, most: []int{80},
		},
		{
			name:    "knee at 200, 50 ms, refusals past 400",
			changes: []change{{0, server{knee: 200, latency: 50 * ms, refuseAbove: 400}}},
			settle:  5 * time.Second, most: []int{400},
		},
		{
			name: "capacity halves, then comes back",
			changes: []change{
				{0, server{knee: 64, latency: 20 * ms, refuseAbove: 160}},
				{30 * time.Second, server{knee: 32, latency: 20 * ms, refuseAbove: 80}},
				{60 * time.Second, server{knee: 64, latency: 20 * ms, refuseAbove: 160}},
			},
			settle: 10 * time.Second, most: []int{128, 64, 128},
		},
		{
			name: "capacity doubles",
			changes: []change{
				{0, server{knee: 32, latency: 20 * ms, refuseAbove: 80}},
				{30 * time.Second, server{knee: 64, latency: 20 * ms, refuseAbove: 160}},
			},
			settle: 10 * time.Second, most: []int{64, 128},
		},
		{
			name: "the server slows down: the same knee, three times the latency",
			changes: []change{
				{0, server{knee: 48, latency: 10 * ms, refuseAbove: 120}},
				{30 * time.Second, server{knee: 48, latency: 30 * ms, refuseAbove: 120}},
			},
			settle: 10 * time.Second, most: []int{96, 96},
		},
		{
			// A client's limiter at 50 a second binds long before the server: more calls
			// in flight only wait for tokens, and the limit must stay near its floor.
			name:    "client-side limiter, qps 50",
			changes: []change{{0, server{knee: 1000, latency: 20 * ms, qps: 50, burst: 100}}},
			// Once the burst's tokens are spent: the floor, and its probes a quarter above.
			settle: 30 * time.Second, most: []int{floor * 5 / 4}, period: 90 * time.Second,
		},
		{
			// The burst's rate, far above the limiter's, stays in the best recent rate
			// for a window of epochs, and the limit comes down only once it is out.
			name:    "client-side limiter, qps 1000, the server's knee above it",
			changes: []change{{0, server{knee: 1000, latency: 20 * ms, qps: 1000, burst: 2000}}},
			settle:  15 * time.Second, most: []int{64},
		},
		{
			name:    "knee past the cap",
			changes: []change{{0, server{knee: 2000, latency: 100 * ms}}},
			settle:  5 * time.Second, most: []int{ceil},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			period := cmp.Or(tc.period, 30*time.Second)
			d := period * time.Duration(len(tc.changes))
			s := run(t, 0, floor, ceil, tc.changes, d)
			for i, ch := range tc.changes {
				from, to := int((ch.at+tc.settle)/time.Second), int((ch.at+period)/time.Second)
				want := min(ch.capacity(), float64(ceil)/ch.latency.Seconds())
				if ch.qps > 0 {
					want = min(want, ch.qps)
				}
				if got := s.rate(from, to); got < 0.9*want {
					t.Errorf("period %d, seconds %d to %d: got %.0f calls a second, want at least %.0f (90%% of %.0f); limits %v",
						i, from, to, got, 0.9*want, want, s.limits)
				}
				if got := s.refusedShare(int(ch.at/time.Second), to); got > 0.01 {
					t.Errorf("period %d: got %.2f%% of the calls refused, want at most 1%%; refused by the second %v",
						i, 100*got, s.refused)
				}
				for sec := from; sec < to; sec++ {
					if s.limits[sec] > tc.most[i] {
						t.Errorf("period %d, second %d: got a limit of %d, want at most %d; limits %v", i, sec, s.limits[sec], tc.most[i], s.limits)
						break
					}
				}
			}
			t.Logf("limits by the second: %v", s.limits)
		})
	}
}

// TestLimitPinnedAndBounded: a pinned limit never moves; an adaptive one stays within its
// floor and cap; and one whose calls are answered in microseconds (an actuator in the
// same process) stays at its floor, since there is no latency to hide.
func TestLimitPinnedAndBounded(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name               string
		fixed, floor, ceil int
		srv                server
		wantMin, wantMax   int
	}{
		{name: "pinned at 8", fixed: 8, floor: 8, ceil: 128, srv: server{knee: 1000, latency: 20 * ms}, wantMin: 8, wantMax: 8},
		{name: "pinned at 300 past refusals", fixed: 300, floor: 8, ceil: 128, srv: server{knee: 40, latency: 100 * ms, refuseAbove: 100}, wantMin: 300, wantMax: 300},
		{name: "capped at 32", floor: 8, ceil: 32, srv: server{knee: 1000, latency: 20 * ms}, wantMin: 25, wantMax: 32}, // probing down now and then
		{name: "floor 16 above the knee", floor: 16, ceil: 128, srv: server{knee: 4, latency: 20 * ms}, wantMin: 16, wantMax: 20},
		{name: "answered in microseconds", floor: 8, ceil: 128, srv: server{knee: 1 << 20, latency: 500 * time.Microsecond}, wantMin: 8, wantMax: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := run(t, tc.fixed, tc.floor, tc.ceil, []change{{0, tc.srv}}, 10*time.Second)
			for sec, got := range s.limits[5:] {
				if got < tc.wantMin || got > tc.wantMax {
					t.Fatalf("second %d: got a limit of %d, want %d to %d; limits %v", sec+5, got, tc.wantMin, tc.wantMax, s.limits)
				}
			}
		})
	}
}

// TestLimitStartsAtTheFloor: the first calls start at once, as many as the floor, with
// nothing measured yet.
func TestLimitStartsAtTheFloor(t *testing.T) {
	var applied []int
	l := New(0, 8, 128, func(n int) int { applied = append(applied, n); return n })
	if got, want := l.Current(), 8; got != want {
		t.Errorf("got %d, want %d", got, want)
	}
	if len(applied) != 1 || applied[0] != 8 {
		t.Errorf("applied %v, want [8]", applied)
	}
}

// TestLimitEpochEndsWhenIdle: when the last call in flight ends, the epoch under way ends
// with it, whichever epoch that call began in, so that the next burst, an hour later, is
// measured from its own first call and not over the idle hour.
func TestLimitEpochEndsWhenIdle(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	l := New(0, 8, 512, func(n int) int { return n })
	var old []Call
	for range 9 {
		old = append(old, l.Begin(t0))
	}
	for _, c := range old[:8] {
		l.End(c, t0.Add(20*ms), Done) // the start-up's first epoch ends: the limit doubles
	}
	if got := l.Current(); got != 16 {
		t.Fatalf("after the first epoch: got a limit of %d, want 16", got)
	}
	c := l.Begin(t0.Add(21 * ms)) // the new epoch's first call
	l.End(c, t0.Add(41*ms), Done)
	l.End(old[8], t0.Add(42*ms), Done) // the last call in flight, of the epoch before
	later := t0.Add(time.Hour)
	l.Begin(later)
	if got := l.ep.start; !got.Equal(later) {
		t.Errorf("the burst an hour later: got its epoch measured from %v, want from its first call at %v", got, later)
	}
}

// TestLimitFailuresDoNotSetTheLeastLatency: calls refused fast (a refusal, a target gone)
// do not make the actions look as if they had no latency to hide: the start-up grows on
// the actions' latency.
func TestLimitFailuresDoNotSetTheLeastLatency(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(0, 8, 512, func(n int) int { return n })
	var calls []Call
	for range 8 {
		calls = append(calls, l.Begin(t0))
	}
	for _, c := range calls[:4] {
		l.End(c, t0.Add(100*time.Microsecond), Failed)
	}
	for _, c := range calls[4:] {
		l.End(c, t0.Add(20*time.Millisecond), Done)
	}
	if got := l.Current(); got != 16 {
		t.Errorf("after an epoch of 4 fast refusals and 4 actions of 20 ms: got a limit of %d, want 16 (doubled)", got)
	}
}
