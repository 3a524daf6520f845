package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
	"github.com/taintevict/taintevict/tolerations"
)

// TestRandomFleets drives Engines with random sequences of what a cluster does to them:
// holders tainted, untainted and deleted, targets bound, changed and deleted, an Actuator
// that fails, fails for want of an answer or succeeds, RetryUnreachable, budgets that hold
// and release, the clock stepped. After every step it checks, on a fake clock:
//
//   - the Actuator is called only for a target that is due then, by the rules of
//     package tolerations applied to the Source's state one taint at a time;
//   - once the Engine is idle, no target that is due and that no budget or backoff holds
//     is left standing;
//   - the Observer's reports follow its contract (evictiontest.CheckContract), and agree
//     with Stats and Pending;
//   - every transition is in the lifecycle's table (TestMain checks that).
func TestRandomFleets(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runRandomFleet(t, seed) })
		})
	}
}

// randomFleet is one Engine under test, its Source and what the test knows.
type randomFleet struct {
	t     *testing.T
	r     *rand.Rand
	clk   *testclock.FakeClock
	src   *evictiontest.Source
	obs   *evictiontest.Observer
	e     *engine.Engine[engine.Target]
	rules tolerations.Options
	// limited: budgets that delay (rate, brake, pauser) are on, so a due target may wait.
	limited bool
	// observed: FromObservation, whose countdowns the test does not track.
	observed bool

	mu      sync.Mutex
	failing map[string]error // target name -> the error its calls return
	paused  map[string]bool  // holder name -> Confirm holds the evictions its taints cause
	bad     []string         // what went wrong, reported by the test goroutine
}

var (
	errRandom      = errors.New("random failure")
	errUnreachable = errors.New("connection refused")
)

const (
	nHolders = 4
	nTargets = 12
)

func runRandomFleet(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed*7+1))
	f := &randomFleet{
		t: t, r: r, clk: testclock.NewFakeClock(t0), src: &evictiontest.Source{}, obs: &evictiontest.Observer{},
		failing: map[string]error{}, paused: map[string]bool{},
	}
	opts := engine.Options{
		Clock:       f.clk,
		Observer:    f.obs,
		Backoff:     engine.Backoff{Base: time.Second, Cap: 20 * time.Second, Jitter: -1},
		Unreachable: func(err error) bool { return errors.Is(err, errUnreachable) },
		Workers:     1 + r.IntN(3),
		ActWorkers:  1 + r.IntN(4),
	}
	switch seed % 5 {
	case 1:
		opts.RateLimit = engine.Limit{PerSecond: 0.5, Burst: 2}
	case 2:
		opts.Brake = engine.Brake{Fraction: 0.6}
	case 3:
		// Each holder is a scope of its own, held until the test confirms it.
		opts.Confirm = engine.Confirm{Fraction: 0.5, Census: censusFunc(func(c engine.Cause, into []engine.Reach) []engine.Reach {
			f.mu.Lock()
			defer f.mu.Unlock()
			return append(into, engine.Reach{Scope: c.Holder, Evicts: 1, Targets: 1, Counted: true, Confirmed: !f.paused[c.Holder]})
		})}
	case 4:
		opts.DeadlineSource = engine.FromObservation
	}
	f.limited = seed%5 >= 1 && seed%5 <= 3
	f.observed = opts.DeadlineSource == engine.FromObservation
	e, err := engine.New(engine.ActuatorFunc(f.act), engine.Source[engine.Target](f.src), opts)
	if err != nil {
		t.Fatal(err)
	}
	f.e = e
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: got %v, want context.Canceled", err)
		}
	}()
	for h := range nHolders {
		f.setHolder(fmt.Sprint("h", h), false)
	}
	e.Synced()
	for step := range 300 {
		f.randomStep()
		if err := f.e.WaitIdle(ctx); err != nil {
			t.Fatalf("step %d: WaitIdle: %v", step, err)
		}
		f.check(step)
		if t.Failed() {
			return
		}
	}
}

// randomStep does one random thing to the fleet.
func (f *randomFleet) randomStep() {
	r := f.r
	switch n := r.IntN(100); {
	case n < 15:
		f.setHolder(fmt.Sprint("h", r.IntN(nHolders)), r.IntN(3) != 0)
	case n < 20:
		name := fmt.Sprint("h", r.IntN(nHolders))
		if _, ok := f.src.DeleteHolder(name); ok {
			f.e.HolderDeleted(name)
		}
	case n < 45:
		f.setTarget(fmt.Sprint("t", r.IntN(nTargets)))
	case n < 52:
		key := types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("t", r.IntN(nTargets))}
		if old, ok := f.src.DeleteTarget(key); ok {
			f.e.TargetDeleted(old)
		}
	case n < 60:
		name := fmt.Sprint("t", r.IntN(nTargets))
		f.mu.Lock()
		f.failing[name] = []error{nil, errRandom, errUnreachable}[r.IntN(3)]
		f.mu.Unlock()
	case n < 65:
		f.e.RetryUnreachable()
	case n < 70:
		name := fmt.Sprint("h", r.IntN(nHolders))
		f.mu.Lock()
		f.paused[name] = !f.paused[name]
		f.mu.Unlock()
		f.e.Recounted(name)
	default:
		f.clk.Step(time.Duration(r.IntN(90)) * time.Second)
	}
}

// setHolder gives the holder name random NoExecute taints (none when not tainted), each
// added up to ten minutes ago.
func (f *randomFleet) setHolder(name string, tainted bool) {
	h := engine.Holder{Name: name, Group: fmt.Sprint("g", name[len(name)-1]%2)}
	if tainted {
		for _, key := range []string{"a", "b"} {
			if f.r.IntN(2) == 0 {
				added := metav1.NewTime(f.clk.Now().Add(-time.Duration(f.r.IntN(600)) * time.Second))
				h.Taints = append(h.Taints, v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute, TimeAdded: &added})
			}
		}
	}
	f.src.SetHolder(h)
	f.e.HolderUpdated(h)
}

// setTarget binds the target name, as a new incarnation or the same, to one or two
// holders with random tolerations.
func (f *randomFleet) setTarget(name string) {
	key := types.NamespacedName{Namespace: "ns", Name: name}
	uid := types.UID(fmt.Sprint(name, "-", f.r.IntN(3)))
	t := engine.Target{Key: key, UID: uid}
	for range 1 + f.r.IntN(2) {
		b := engine.Binding{Holder: fmt.Sprint("h", f.r.IntN(nHolders))}
		for _, key := range []string{"a", "b"} {
			switch f.r.IntN(3) {
			case 0:
			case 1:
				b.Tolerations = append(b.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
			default:
				s := int64(f.r.IntN(400))
				b.Tolerations = append(b.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &s})
			}
		}
		t.Bindings = append(t.Bindings, b)
	}
	if f.r.IntN(10) == 0 {
		t.Leaving = "Finished"
	}
	f.src.SetTarget(t)
	f.e.TargetUpdated(t)
}

// dueNow reports whether the target is due now by the rules, from the Source, one taint
// at a time (FromTimeAdded; under FromObservation a countdown started by the Engine is not
// known here, so only untolerated taints count as due now).
func (f *randomFleet) dueNow(t engine.Target, observed bool) bool {
	if t.Leaving != "" {
		return false
	}
	now := f.clk.Now()
	for _, b := range t.Bindings {
		h, ok, _ := f.src.Holder(b.Holder)
		if !ok {
			continue
		}
		for i := range h.Taints {
			var e tolerations.Eviction
			if observed {
				e = tolerations.ObservedDeadline(h.Taints[i:i+1], b.Tolerations, now, now, f.rules)
			} else {
				e = tolerations.Deadline(h.Taints[i:i+1], b.Tolerations, now, now, f.rules)
			}
			if e.Verdict == tolerations.EvictNow {
				return true
			}
		}
	}
	return false
}

func (f *randomFleet) act(_ context.Context, ref engine.Ref) error {
	cur, ok, _ := f.src.Target(ref.Key())
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !ok || cur.UID != ref.UID:
		f.bad = append(f.bad, fmt.Sprintf("acted on %s (%s), which the Source does not have", ref, ref.UID))
		return engine.ErrGone
	case !f.dueNow(cur, false) && !f.couldBeDueByObservation(cur):
		f.bad = append(f.bad, fmt.Sprintf("acted on %s at +%v, not due: %+v", ref, f.clk.Since(t0), cur))
	}
	if err := f.failing[ref.Name]; err != nil {
		return err
	}
	f.src.DeleteTarget(ref.Key())
	f.e.TargetDeleted(cur) // as an informer would
	return nil
}

// couldBeDueByObservation reports whether, under FromObservation, a tolerated taint's
// countdown (started when the Engine first saw it, which the test does not track) may have
// run out: any tolerated NoExecute taint with seconds counts.
func (f *randomFleet) couldBeDueByObservation(t engine.Target) bool {
	for _, b := range t.Bindings {
		h, ok, _ := f.src.Holder(b.Holder)
		if !ok || len(h.Taints) == 0 {
			continue
		}
		for _, tol := range b.Tolerations {
			if tol.TolerationSeconds != nil {
				return true
			}
		}
	}
	return false
}

// check runs the checks of an idle Engine after step.
func (f *randomFleet) check(step int) {
	if n := f.e.BadTransitions(); n != 0 {
		f.t.Errorf("step %d: %d transitions from a state their row of the lifecycle's table does not leave from", step, n)
	}
	t := f.t
	f.mu.Lock()
	bad := f.bad
	f.bad = nil
	f.mu.Unlock()
	for _, b := range bad {
		t.Errorf("step %d: %s", step, b)
	}
	events := f.obs.Events()
	open := 0
	for _, key := range evictiontest.Targets(events) {
		o, err := evictiontest.CheckContract(evictiontest.EventsOf(events, key), false)
		if err != nil {
			t.Errorf("step %d: %s: Observer contract: %v", step, key, err)
		}
		if o {
			open++
		}
	}
	s := f.e.Stats()
	pending := f.e.Pending()
	if s.Pending() != len(pending) {
		t.Errorf("step %d: Stats().Pending() = %d, len(Pending()) = %d", step, s.Pending(), len(pending))
	}
	if open != s.Pending()+s.Running {
		t.Errorf("step %d: the reports leave %d open, Stats %d pending and %d running", step, open, s.Pending(), s.Running)
	}
	if f.limited {
		return // a due target may wait at a budget
	}
	for i := range nTargets {
		cur, ok, _ := f.src.Target(types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("t", i)})
		f.mu.Lock()
		failing := f.failing[cur.Key.Name] != nil
		f.mu.Unlock()
		if ok && !failing && f.dueNow(cur, f.observed) && !f.retrying(cur) {
			t.Errorf("step %d: %s is due at +%v and still there; pending %v", step, cur.Key.Name, f.clk.Since(t0), pending)
		}
	}
}

// retrying reports whether the target's eviction waits to retry a failed call (its
// failure mode may have just been switched off).
func (f *randomFleet) retrying(t engine.Target) bool {
	for _, p := range f.e.Pending() {
		if p.Target.Name == t.Key.Name && !p.At.After(f.clk.Now()) {
			return true
		}
	}
	return false
}

// censusFunc adapts a function to an engine.Census.
type censusFunc func(c engine.Cause, into []engine.Reach) []engine.Reach

func (f censusFunc) Reach(c engine.Cause, into []engine.Reach) []engine.Reach { return f(c, into) }
