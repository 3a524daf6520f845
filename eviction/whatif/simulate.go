package whatif

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
)

// Engine is what a simulation runs: an [eviction.Manager]
// or an [engine.Engine], made by the caller's build function with the options
// [Simulate] gives it, and already told the state to simulate (updates given before Run
// are kept until it runs).
type Engine interface {
	Run(ctx context.Context) error
	WaitIdle(ctx context.Context) error
	Pending() []engine.Pending
}

// Verdict is what the engine did with one target in a simulation.
type Verdict string

const (
	// Stays: the engine never acted on the target: it tolerates every NoExecute taint of
	// its holders forever, or none of them is tainted. An eviction that opened and was
	// cancelled (its tolerations now tolerate the taints forever) stays too.
	Stays Verdict = "Stays"
	// Evicted: the engine acted on the target at [Fate.At].
	Evicted Verdict = "Evicted"
	// Held: the target fell due at [Fate.At] but a budget holds it with no end in sight:
	// the brake, while so many holders carry the taint, or the caller's Pauser.
	Held Verdict = "Held"
	// Pending: the engine still had the eviction pending when the simulation ended, at its
	// horizon: [Fate.At] is when it is due, or when it fell due if a budget delays it.
	Pending Verdict = "Pending"
	// Leaving: the target is leaving on its own (a pod finished or being deleted); the
	// engine never acts on it. [Fate.Reason] says why.
	Leaving Verdict = "Leaving"
)

// Fate is what the engine did with one target in a simulation, from its Observer's reports
// and, for a target still waiting at the end, its Pending list.
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
	// Delayed is the budget the target waited at, if any: [engine.ReasonRateLimited] or
	// [engine.ReasonPaused].
	Delayed engine.Reason
	// Reason is the engine's reason for a target whose eviction was cancelled (Stays) or
	// skipped (Leaving); "" otherwise.
	Reason engine.Reason
}

// Timeline is the outcome of a simulation: the fate of every target the engine decided
// to evict at some point. Targets it never scheduled (they stay) are not in it.
type Timeline struct {
	// Start is the simulation's start: "now" for the taints and the deadlines.
	Start time.Time
	// End is the time of the simulation's clock when nothing was left to step to.
	End time.Time
	// Fates holds the fate of each target the engine reported about, by key.
	Fates map[types.NamespacedName]Fate
	// Steps is how many times the clock was stepped.
	Steps int
}

// Keys returns the keys of t.Fates, earliest At first (a target that stays last), ties
// by key.
func (t *Timeline) Keys() []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(t.Fates))
	for k := range t.Fates {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		fa, fb := t.Fates[a], t.Fates[b]
		return cmp.Or(compareAt(fa, fb), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return keys
}

// compareAt orders fates by At, those without one (they stay) last.
func compareAt(a, b Fate) int {
	switch {
	case a.At.IsZero() && b.At.IsZero():
		return 0
	case a.At.IsZero():
		return 1
	case b.At.IsZero():
		return -1
	}
	return a.At.Compare(b.At)
}

// ErrUnsettled is returned by [Simulate] when the engine still had timers armed after more
// steps than it could possibly need (an engine that re-arms a timer without end), or armed
// a timer the simulation cannot step to.
var ErrUnsettled = errors.New("whatif: the engine did not settle")

// End is the end of the engine's schedule, early in 2262 (the end of int64 nanoseconds,
// where the engine keeps evictions that wait for no time, such as those the brake holds):
// a simulation steps to no time at or after it.
var End = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)

// Simulate runs an engine in dry run on a fake clock that starts at start, and returns
// what it did until the horizon until (zero, or later than [End], means End): build makes the engine with opts (the caller's, with Clock, DryRun and
// Observer set by Simulate: the caller's Observer, if any, is told every decision after
// the simulation's own) and tells it the state to simulate. Simulate then runs it, waits
// until it is idle, and steps the clock straight to the next timer the engine armed (a
// deadline, a rate limit's slot), again and again, until no timer is armed before until:
// every eviction has then been acted on (in dry run), waits at a budget that only a change
// would release (the brake, a Pauser: Held), or is due after until (Pending). The verdicts and times are the engine's own; none
// is computed here.
//
// It blocks until the simulation ends or ctx is done (then it returns ctx's error), and
// stops the engine before it returns. It is safe to run several simulations at once.
func Simulate(ctx context.Context, start, until time.Time, opts engine.Options, build func(engine.Options) (Engine, error)) (*Timeline, error) {
	clk := newStepClock(start)
	rec := &recorder{clock: clk, fates: map[types.NamespacedName]*Fate{}}
	opts.Clock, opts.DryRun = clk, true
	if opts.Observer != nil {
		opts.Observer = engine.Observers{rec, opts.Observer}
	} else {
		opts.Observer = rec
	}
	e, err := build(opts)
	if err != nil {
		return nil, fmt.Errorf("whatif: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped := func() error {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("whatif: the engine stopped: %w", err)
		}
		return nil
	}

	if until.IsZero() || until.After(End) {
		until = End
	}
	tl, err := step(ctx, clk, e, rec, until)
	if serr := stopped(); serr != nil {
		return nil, serr
	}
	if err != nil {
		return nil, err
	}
	tl.Start = start
	return tl, nil
}

// step waits for the engine and steps the clock until no timer is armed, then collects the
// timeline.
func step(ctx context.Context, clk *stepClock, e Engine, rec *recorder, until time.Time) (*Timeline, error) {
	steps := 0
	for {
		if err := e.WaitIdle(ctx); err != nil {
			return nil, fmt.Errorf("whatif: waiting for the engine: %w", err)
		}
		if clk.untracked() {
			return nil, fmt.Errorf("%w: it waits on a timer the simulation cannot see", ErrUnsettled)
		}
		next, ok := clk.next()
		if !ok || !next.Before(until) {
			pending := e.Pending()
			if unarmed(pending, clk, until) {
				return nil, fmt.Errorf("%w: evictions are pending before the horizon with no timer armed", ErrUnsettled)
			}
			// What waits now is due after the horizon, or waits for a change that will not
			// come: the brake or a Pauser holds it.
			for _, p := range pending {
				rec.held(p)
			}
			break
		}
		// Each step acts on at least one target or moves a budget's slot; far more than that
		// means an engine that re-arms without end.
		if limit := 4*rec.len() + 1024; steps > limit {
			return nil, fmt.Errorf("%w after %d steps (simulated time %s)", ErrUnsettled, steps, clk.Now())
		}
		clk.set(later(next, clk.Now()))
		steps++
	}
	return &Timeline{End: clk.Now(), Fates: rec.result(), Steps: steps}, nil
}

// unarmed reports whether an eviction of pending waits for a time before until (its
// deadline, or a rate limit's slot) while no timer is armed for it.
func unarmed(pending []engine.Pending, clk *stepClock, until time.Time) bool {
	next, ok := clk.next()
	for _, p := range pending {
		if p.Delayed != engine.ReasonPaused && p.At.Before(until) && (!ok || next.After(p.At) && p.Delayed == "") {
			return true
		}
	}
	return false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// recorder is the simulation's Observer: it keeps the fate of each target the engine
// reports about. It is safe for concurrent use.
type recorder struct {
	engine.NopObserver
	clock *stepClock
	mu    sync.Mutex
	fates map[types.NamespacedName]*Fate
}

var _ engine.Observer = (*recorder)(nil)

// fate returns the fate of ref's target, made on first use. The caller holds mu.
func (r *recorder) fate(ref engine.Ref) *Fate {
	k := ref.Key()
	f := r.fates[k]
	if f == nil {
		f = &Fate{Verdict: Stays}
		r.fates[k] = f
	}
	return f
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.fates)
}

// Scheduled records the deadline and the holder.
func (r *recorder) Scheduled(ref engine.Ref, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.fate(ref)
	f.Holder, f.Deadline = ref.Holder, at
}

// Delayed records the budget the eviction waits at.
func (r *recorder) Delayed(ref engine.Ref, reason engine.Reason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fate(ref).Delayed = reason
}

// Succeeded records the eviction, at the simulated time.
func (r *recorder) Succeeded(ref engine.Ref, a engine.Attempt, _ bool) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.fate(ref)
	f.Verdict, f.Holder, f.At = Evicted, ref.Holder, now
	if f.Deadline.IsZero() {
		f.Deadline = a.Due
	}
}

// Cancelled records that the target stays after all.
func (r *recorder) Cancelled(ref engine.Ref, reason engine.Reason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.fate(ref) = Fate{Verdict: Stays, Reason: reason}
}

// Skipped records that the target is leaving on its own.
func (r *recorder) Skipped(ref engine.Ref, reason engine.Reason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.fate(ref) = Fate{Verdict: Leaving, Reason: reason}
}

// held records an eviction still pending when the simulation ends.
func (r *recorder) held(p engine.Pending) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.fate(p.Target)
	f.Verdict, f.Holder, f.At = Pending, p.Target.Holder, p.At
	if p.Delayed != "" {
		f.Delayed = p.Delayed
	}
	if p.Delayed == engine.ReasonPaused {
		f.Verdict = Held
	}
}

// result returns the fates recorded.
func (r *recorder) result() map[types.NamespacedName]Fate {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[types.NamespacedName]Fate, len(r.fates))
	for k, f := range r.fates {
		out[k] = *f
	}
	return out
}
