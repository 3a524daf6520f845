package whatif

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
)

// Engine is what a simulation runs: an [eviction.Manager] or an [engine.Engine], made by
// the caller's build function and told the state to simulate before Run.
type Engine interface {
	Run(ctx context.Context) error
	WaitIdle(ctx context.Context) error
	Pending() []engine.Pending
}

// Departing is what an [Engine] also implements so that, under [engine.InFlight], the
// targets it acts on leave (otherwise they stay): Grace is how long after the call the
// target is gone (a pod's terminationGracePeriodSeconds), and Gone takes the target out of
// the engine's Source and tells the engine.
type Departing interface {
	Grace(target engine.Ref) time.Duration
	Gone(target engine.Ref)
}

// Verdict is what the engine did with one target in a simulation.
type Verdict string

const (
	// Stays: the engine never acted on the target, or cancelled its eviction.
	Stays Verdict = "Stays"
	// Evicted: the engine acted on the target at [Fate.At].
	Evicted Verdict = "Evicted"
	// Held: the target fell due at [Fate.At], but the brake or Confirm holds it until the
	// cluster changes ([Fate.Delayed] says which).
	Held Verdict = "Held"
	// Pending: still pending at the horizon: [Fate.At] is when it is due (or fell due).
	Pending Verdict = "Pending"
	// Leaving: the target is leaving on its own ([Fate.Reason] says why): never acted on.
	Leaving Verdict = "Leaving"
)

// Fate is what the engine did with one target in a simulation, as its Observer and its
// final Pending list said.
type Fate struct {
	Verdict Verdict
	// Holder is the holder whose taint made the target due (the Ref's holder); "" for a
	// target that stays.
	Holder string
	// Deadline is when the target's tolerations made it due, as the engine last scheduled
	// it; zero for a target that stays.
	Deadline time.Time
	// At is when the engine acted on the target (Evicted), or when it fell due and started
	// to wait (Held). Later than Deadline when a budget delayed it.
	At time.Time
	// Delayed is the budget the target waited at last, if any.
	Delayed engine.Reason
	// Reason is the engine's reason for a target whose eviction was cancelled (Stays) or
	// skipped (Leaving); "" otherwise.
	Reason engine.Reason
}

// Timeline is the outcome of a simulation: the fate of every target the engine reported
// about, by key (one it never scheduled stays, and is not in it), from Start to End, when
// nothing was left to step to, in Steps steps.
type Timeline struct {
	Start, End time.Time
	Fates      map[types.NamespacedName]Fate
	Steps      int
}

// ErrUnsettled is returned by [Simulate] when the engine re-arms timers without end, arms
// one the simulation cannot step to, or waits with nothing armed.
var ErrUnsettled = errors.New("whatif: the engine did not settle")

// End is the end of the engine's schedule, early in 2262 (the end of int64 nanoseconds):
// a simulation steps to no time at or after it.
var End = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)

// Simulate runs an engine on a fake clock from start to the horizon until (zero, or later
// than [End], means End), and returns what it did. build makes the engine with opts (with
// the simulation's Clock, ActTimeout and Observer; the caller's Observer is told every
// decision after it) and act, an Actuator that acts on nothing and answers at once, and
// tells it the state to simulate. Simulate runs it, and steps the clock straight to the
// next timer the engine armed or the next departure ([Departing]), each time it is idle,
// until none is before until: every eviction has then been acted on, is held by the brake
// or Confirm (Held), or is due after until (Pending).
//
// It blocks until the simulation ends or ctx is done, and stops the engine before it
// returns. It is safe to run several simulations at once.
func Simulate(ctx context.Context, start, until time.Time, opts engine.Options, build func(opts engine.Options, act engine.Actuator) (Engine, error)) (*Timeline, error) {
	clk := newStepClock(start)
	rec := &recorder{clock: clk, fates: map[types.NamespacedName]*Fate{}}
	act := &actuator{clock: clk, inFlight: opts.InFlight != engine.InFlight{}}
	opts.Clock, opts.DryRun, opts.ActTimeout = clk, false, -1 // no call times out: each returns at once
	if opts.Observer != nil {
		opts.Observer = engine.Observers{rec, opts.Observer}
	} else {
		opts.Observer = rec
	}
	e, err := build(opts, act)
	if err != nil {
		return nil, fmt.Errorf("whatif: %w", err)
	}
	act.departing, _ = e.(Departing)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	if until.IsZero() || until.After(End) {
		until = End
	}
	tl, err := step(ctx, clk, e, rec, act, until)
	cancel()
	if rerr := <-done; rerr != nil && !errors.Is(rerr, context.Canceled) {
		return nil, fmt.Errorf("whatif: the engine stopped: %w", rerr)
	}
	if err != nil {
		return nil, err
	}
	tl.Start = start
	return tl, nil
}

// step waits for the engine and steps the clock until nothing is armed before until.
func step(ctx context.Context, clk *stepClock, e Engine, rec *recorder, act *actuator, until time.Time) (*Timeline, error) {
	steps := 0
	for {
		if err := e.WaitIdle(ctx); err != nil {
			return nil, fmt.Errorf("whatif: waiting for the engine: %w", err)
		}
		if clk.untracked() {
			return nil, fmt.Errorf("%w: it waits on a timer the simulation cannot see", ErrUnsettled)
		}
		next, ok := clk.next()
		if at, due := act.next(); due && (!ok || at.Before(next)) {
			next, ok = at, true
		}
		if !ok || !next.Before(until) {
			pending := e.Pending()
			if unarmed(pending, next, ok, until) {
				return nil, fmt.Errorf("%w: evictions are pending before the horizon with no timer armed", ErrUnsettled)
			}
			for _, p := range pending {
				rec.held(p)
			}
			break
		}
		// Far more steps than targets means an engine that re-arms without end.
		if limit := 4*rec.len() + 1024; steps > limit {
			return nil, fmt.Errorf("%w after %d steps (simulated time %s)", ErrUnsettled, steps, clk.Now())
		}
		if now := clk.Now(); next.Before(now) {
			next = now // a timer armed for the past fires now: the clock never goes back
		}
		clk.set(next)
		act.depart(clk.Now())
		steps++
	}
	return &Timeline{End: clk.Now(), Fates: rec.result(), Steps: steps}, nil
}

// unarmed reports whether an eviction of pending waits for a time before until (its
// deadline, or a budget's slot) while nothing is armed for it: next, if ok, is the next
// timer or departure.
func unarmed(pending []engine.Pending, next time.Time, ok bool, until time.Time) bool {
	for _, p := range pending {
		if !held(p.Delayed) && p.At.Before(until) && (!ok || next.After(p.At) && p.Delayed == "") {
			return true
		}
	}
	return false
}

// held reports whether reason waits for a change no simulation makes: the brake's, or an
// operator's confirmation.
func held(reason engine.Reason) bool {
	return reason == engine.ReasonPaused || reason == engine.ReasonUnconfirmed
}

// actuator is the simulation's Actuator: it acts on nothing, and, for InFlight, keeps when
// each target departs, the earliest first.
type actuator struct {
	clock     *stepClock
	inFlight  bool
	departing Departing // nil: targets stay

	mu  sync.Mutex
	due []departure
}

type departure struct {
	at     time.Time
	target engine.Ref
}

// Act records when the target departs.
func (a *actuator) Act(_ context.Context, target engine.Ref) error {
	if !a.inFlight || a.departing == nil {
		return nil
	}
	d := departure{at: a.clock.Now().Add(a.departing.Grace(target)), target: target}
	a.mu.Lock()
	defer a.mu.Unlock()
	// After those due at the same time: in the order they went.
	i := sort.Search(len(a.due), func(i int) bool { return a.due[i].at.After(d.at) })
	a.due = slices.Insert(a.due, i, d)
	return nil
}

// next returns when the first departure is due, if any.
func (a *actuator) next() (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.due) == 0 {
		return time.Time{}, false
	}
	return a.due[0].at, true
}

// depart takes out of the Source the targets due to depart by now, in order.
func (a *actuator) depart(now time.Time) {
	a.mu.Lock()
	n := 0
	for n < len(a.due) && !a.due[n].at.After(now) {
		n++
	}
	gone := slices.Clone(a.due[:n])
	a.due = a.due[n:]
	a.mu.Unlock()
	for _, d := range gone {
		a.departing.Gone(d.target)
	}
}

// recorder is the simulation's Observer: the fates.
type recorder struct {
	engine.NopObserver
	clock *stepClock
	mu    sync.Mutex
	fates map[types.NamespacedName]*Fate
}

var _ engine.Observer = (*recorder)(nil)

// update changes the fate of ref's target, made on first use.
func (r *recorder) update(ref engine.Ref, change func(f *Fate)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.fates[ref.Key()]
	if f == nil {
		f = &Fate{Verdict: Stays}
		r.fates[ref.Key()] = f
	}
	change(f)
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.fates)
}

func (r *recorder) Scheduled(ref engine.Ref, at time.Time) {
	r.update(ref, func(f *Fate) { f.Holder, f.Deadline = ref.Holder, at })
}

func (r *recorder) Delayed(ref engine.Ref, reason engine.Reason) {
	r.update(ref, func(f *Fate) { f.Delayed = reason })
}

func (r *recorder) Succeeded(ref engine.Ref, a engine.Attempt, _ bool) {
	now := r.clock.Now()
	r.update(ref, func(f *Fate) {
		f.Verdict, f.Holder, f.At = Evicted, ref.Holder, now
		if f.Deadline.IsZero() {
			f.Deadline = a.Due
		}
	})
}

func (r *recorder) Cancelled(ref engine.Ref, reason engine.Reason) {
	r.unlessEvicted(ref, Fate{Verdict: Stays, Reason: reason})
}

func (r *recorder) Skipped(ref engine.Ref, reason engine.Reason) {
	r.unlessEvicted(ref, Fate{Verdict: Leaving, Reason: reason})
}

// unlessEvicted sets the fate of ref's target to f, unless it was evicted (and left).
func (r *recorder) unlessEvicted(ref engine.Ref, f Fate) {
	r.update(ref, func(old *Fate) {
		if old.Verdict != Evicted {
			*old = f
		}
	})
}

// held records an eviction still pending when the simulation ends.
func (r *recorder) held(p engine.Pending) {
	r.update(p.Target, func(f *Fate) {
		f.Verdict, f.Holder, f.At = Pending, p.Target.Holder, p.At
		if p.Delayed != "" {
			f.Delayed = p.Delayed
		}
		if held(p.Delayed) {
			f.Verdict = Held
		}
	})
}

func (r *recorder) result() map[types.NamespacedName]Fate {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[types.NamespacedName]Fate, len(r.fates))
	for k, f := range r.fates {
		out[k] = *f
	}
	return out
}
