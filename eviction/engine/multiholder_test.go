package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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

var t0 = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

// fleet is an Engine over an evictiontest.Source on a fake clock, in a synctest bubble. Its
// actuator records each call with the fake time, removes the target from the Source and
// tells the Engine, as an API server and an informer would.
type fleet struct {
	t   *testing.T
	clk *testclock.FakeClock
	src *evictiontest.Source
	obs *evictiontest.Observer
	e   *engine.Engine[engine.Target]

	mu    sync.Mutex
	calls map[string][]time.Time // target name -> the times it was acted on
}

func newFleet(t *testing.T, opts engine.Options) *fleet {
	f := &fleet{
		t:     t,
		clk:   testclock.NewFakeClock(t0),
		src:   &evictiontest.Source{},
		obs:   &evictiontest.Observer{},
		calls: map[string][]time.Time{},
	}
	opts.Clock, opts.Observer = f.clk, f.obs
	e, err := engine.New(engine.ActuatorFunc(f.act), engine.Source[engine.Target](f.src), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.e = e
	e.Synced() // the test feeds the fleet live, as a cluster that changes after the informers synced
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: got %v, want context.Canceled", err)
		}
	})
	return f
}

func (f *fleet) act(_ context.Context, ref engine.Ref) error {
	f.mu.Lock()
	f.calls[ref.Name] = append(f.calls[ref.Name], f.clk.Now())
	f.mu.Unlock()
	key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	cur, ok, _ := f.src.Target(key)
	if !ok || cur.UID != ref.UID {
		return engine.ErrGone
	}
	f.src.DeleteTarget(key)
	f.e.TargetDeleted(cur)
	return nil
}

func (f *fleet) holder(name string, taints ...v1.Taint) {
	h := engine.Holder{Name: name, Taints: taints}
	f.src.SetHolder(h)
	f.e.HolderUpdated(h)
}

func (f *fleet) target(name string, bindings ...engine.Binding) {
	t := engine.Target{Key: types.NamespacedName{Namespace: "ns", Name: name}, UID: types.UID(name + "-1"), Bindings: bindings}
	f.src.SetTarget(t)
	f.e.TargetUpdated(t)
}

func (f *fleet) actedOn(name string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls[name])
}

func (f *fleet) step(d time.Duration) {
	f.clk.Step(d)
	synctest.Wait()
}

func taint(key string, added time.Time) v1.Taint {
	t := v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute}
	if !added.IsZero() {
		t.TimeAdded = &metav1.Time{Time: added}
	}
	return t
}

func tolFor(key string, secs int64) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs}
}

func tolForever(key string) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
}

// TestEarliestBindingDecides: a target on two holders goes at the earliest deadline over
// its bindings, each read with its own tolerations, and its Ref names that binding's holder.
// When that holder recovers, the eviction moves to the other's deadline; when both do, it is
// cancelled.
func TestEarliestBindingDecides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, engine.Options{})
		f.holder("east", taint("down", t0))
		f.holder("west", taint("down", t0))
		synctest.Wait()
		f.target("shop",
			engine.Binding{Holder: "east", Tolerations: []v1.Toleration{tolFor("down", 600)}},
			engine.Binding{Holder: "west", Tolerations: []v1.Toleration{tolFor("down", 120)}})
		synctest.Wait()
		if p := f.e.Pending(); len(p) != 1 || p[0].Target.Holder != "west" || !p[0].At.Equal(t0.Add(2*time.Minute)) {
			t.Fatalf("got Pending %v, want shop off west at +2m", p)
		}
		f.step(time.Minute)
		f.holder("west") // west recovers: east's deadline decides
		synctest.Wait()
		if p := f.e.Pending(); len(p) != 1 || p[0].Target.Holder != "east" || !p[0].At.Equal(t0.Add(10*time.Minute)) {
			t.Fatalf("after west recovered: got Pending %v, want shop off east at +10m", p)
		}
		f.holder("east")
		synctest.Wait()
		if p := f.e.Pending(); len(p) != 0 {
			t.Fatalf("after both recovered: got Pending %v, want none", p)
		}
		var got []string
		for _, e := range f.obs.Events() {
			got = append(got, e.String()+" "+e.Pod.Holder)
		}
		want := []string{
			"Scheduled ns/shop at 10:02:00 west",
			"Scheduled ns/shop at 10:10:00 east",
			"Cancelled ns/shop: NotTainted east",
		}
		if !slices.Equal(got, want) {
			t.Errorf("got reports\n\t%q\nwant\n\t%q", got, want)
		}
		f.step(time.Hour)
		if got := f.actedOn("shop"); len(got) != 0 {
			t.Errorf("acted on shop at %v, want never", got)
		}
	})
}

// TestUntoleratedBindingEvictsAtOnce: one binding that tolerates nothing makes the target
// due at once, whatever the others tolerate; a holder that is deleted no longer counts.
func TestUntoleratedBindingEvictsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, engine.Options{})
		f.holder("gpu-0", taint("ecc", t0))
		f.holder("gpu-1")
		f.target("train",
			engine.Binding{Holder: "gpu-1", Tolerations: []v1.Toleration{tolForever("ecc")}},
			engine.Binding{Holder: "gpu-0", Tolerations: nil})
		f.target("infer",
			engine.Binding{Holder: "gpu-1", Tolerations: nil},
			engine.Binding{Holder: "gpu-0", Tolerations: []v1.Toleration{tolForever("ecc")}})
		synctest.Wait()
		if got := f.actedOn("train"); !slices.Equal(got, []time.Time{t0}) {
			t.Errorf("train: acted on at %v, want once at +0s", got)
		}
		if got := f.actedOn("infer"); len(got) != 0 {
			t.Errorf("infer: acted on at %v, want never: it tolerates gpu-0's taint forever", got)
		}
		f.holder("gpu-1", taint("ecc", t0))
		synctest.Wait()
		if got := f.actedOn("infer"); !slices.Equal(got, []time.Time{t0}) {
			t.Errorf("infer, after gpu-1 was tainted: acted on at %v, want once at +0s", got)
		}
	})
}

// TestBrakeCountsHolders: the brake counts holders, per group; a target on holders of two
// groups waits while the group of the holder that makes it due is paused.
func TestBrakeCountsHolders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, engine.Options{Brake: engine.Brake{ZoneFraction: 0.5}})
		for _, h := range []engine.Holder{{Name: "a-0", Group: "a"}, {Name: "a-1", Group: "a"}, {Name: "a-2", Group: "a"}, {Name: "b-0", Group: "b"}} {
			f.src.SetHolder(h)
			f.e.HolderUpdated(h)
		}
		f.target("x",
			engine.Binding{Holder: "a-0"},
			engine.Binding{Holder: "b-0"})
		synctest.Wait()
		// Two of the three of group a tainted: a is paused; x, due because of a-0, waits.
		for _, name := range []string{"a-0", "a-1"} {
			h := engine.Holder{Name: name, Group: "a", Taints: []v1.Taint{taint("down", t0)}}
			f.src.SetHolder(h)
			f.e.HolderUpdated(h)
		}
		synctest.Wait()
		if p := f.e.Pending(); len(p) != 1 || p[0].Delayed != engine.ReasonPaused {
			t.Fatalf("got Pending %v, want x paused", p)
		}
		// a-1 recovers: 1 of 3 in a is fewer than half; x goes.
		h := engine.Holder{Name: "a-1", Group: "a"}
		f.src.SetHolder(h)
		f.e.HolderUpdated(h)
		synctest.Wait()
		if got := f.actedOn("x"); !slices.Equal(got, []time.Time{t0}) {
			t.Errorf("x: acted on at %v, want once at +0s, when the brake released it", got)
		}
	})
}

// TestEarliestDeadlineProperty plays random fleets: targets bound to one to four of five
// holders, each binding with random tolerations, holders whose taints come and go, and a
// clock that steps at random. After every change and every step, with the Engine idle, each
// target has been acted on exactly when the earliest deadline over its bindings, as a
// reference computes it from the fleet's state, has come: never earlier, never later than
// the step that reached it, and never twice. Each seed is reproducible: go test -run
// 'TestEarliestDeadlineProperty/seed_N$'.
func TestEarliestDeadlineProperty(t *testing.T) {
	for seed := range 100 {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				newFleetRun(t, uint64(seed)).run(40)
			})
		})
	}
}

type fleetRun struct {
	*fleet
	rng      *rand.Rand
	holders  []string
	keys     []string
	taints   map[string][]v1.Taint // holder -> its taints now
	seen     map[string]time.Time  // holder/key -> when a taint without TimeAdded came
	bindings map[string][]engine.Binding
	settled  map[string]bool // acted on before the last check
	trace    []string
}

func newFleetRun(t *testing.T, seed uint64) *fleetRun {
	r := &fleetRun{
		fleet:    newFleet(t, engine.Options{}),
		rng:      rand.New(rand.NewPCG(seed, 11)),
		holders:  []string{"h0", "h1", "h2", "h3", "h4"},
		keys:     []string{"a", "b", "c"},
		taints:   map[string][]v1.Taint{},
		seen:     map[string]time.Time{},
		bindings: map[string][]engine.Binding{},
		settled:  map[string]bool{},
	}
	for _, h := range r.holders {
		r.holder(h)
	}
	for i := range 8 {
		name := fmt.Sprint("t", i)
		var bs []engine.Binding
		for _, j := range r.rng.Perm(len(r.holders))[:1+r.rng.IntN(4)] {
			bs = append(bs, engine.Binding{Holder: r.holders[j], Tolerations: r.tolerations()})
		}
		r.bindings[name] = bs
		r.target(name, bs...)
	}
	synctest.Wait()
	r.trace = append(r.trace, "start")
	r.check()
	return r
}

// tolerations returns up to three random tolerations: finite, forever, or of a key no
// holder uses.
func (r *fleetRun) tolerations() []v1.Toleration {
	var out []v1.Toleration
	for range r.rng.IntN(4) {
		key := r.keys[r.rng.IntN(len(r.keys))]
		switch r.rng.IntN(4) {
		case 0:
			out = append(out, tolForever(key))
		case 1:
			out = append(out, tolFor("unused", 5))
		default:
			out = append(out, tolFor(key, int64(r.rng.IntN(300))))
		}
	}
	return out
}

// change taints or untaints a holder: a new set of up to two keys, each with a TimeAdded in
// the last minute or none.
func (r *fleetRun) change() {
	h := r.holders[r.rng.IntN(len(r.holders))]
	now := r.clk.Now()
	var taints []v1.Taint
	for _, k := range r.keys {
		if r.rng.IntN(3) != 0 {
			continue
		}
		added := time.Time{}
		if r.rng.IntN(2) == 0 {
			added = now.Add(-time.Duration(r.rng.IntN(60)) * time.Second)
		}
		taints = append(taints, taint(k, added))
	}
	// Taints without TimeAdded count from when the Engine first saw them on the holder:
	// kept from before when the same taint stays, now when it comes.
	seen := map[string]time.Time{}
	for _, tt := range taints {
		if tt.TimeAdded != nil {
			continue
		}
		if at, ok := r.seen[h+"/"+tt.Key]; ok && hasUnstamped(r.taints[h], tt.Key) {
			seen[h+"/"+tt.Key] = at
		} else {
			seen[h+"/"+tt.Key] = now
		}
	}
	for k := range r.seen {
		if len(k) > len(h) && k[:len(h)+1] == h+"/" {
			delete(r.seen, k)
		}
	}
	for k, v := range seen {
		r.seen[k] = v
	}
	r.taints[h] = taints
	r.holder(h, taints...)
	r.trace = append(r.trace, fmt.Sprintf("%s: %s %v", now.Sub(t0), h, taintKeys(taints)))
}

func hasUnstamped(taints []v1.Taint, key string) bool {
	return slices.ContainsFunc(taints, func(t v1.Taint) bool { return t.Key == key && t.TimeAdded == nil })
}

func taintKeys(taints []v1.Taint) []string {
	var out []string
	for _, t := range taints {
		s := t.Key
		if t.TimeAdded != nil {
			s += "@" + t.TimeAdded.Sub(t0).String()
		}
		out = append(out, s)
	}
	return out
}

// deadline is the reference: the earliest time over the target's bindings at which a
// NoExecute taint of the holder is not tolerated, or its first tolerating toleration (in
// list order, kube's node rule) runs out; false when there is none.
func (r *fleetRun) deadline(name string) (time.Time, bool) {
	var best time.Time
	found := false
	for _, b := range r.bindings[name] {
		for _, tt := range r.taints[b.Holder] {
			start := r.seen[b.Holder+"/"+tt.Key]
			if tt.TimeAdded != nil {
				start = tt.TimeAdded.Time
			}
			i := slices.IndexFunc(b.Tolerations, func(tol v1.Toleration) bool {
				return tolerations.Tolerates(&tol, &tt, tolerations.Options{})
			})
			var due time.Time
			switch {
			case i < 0:
				due = start // not tolerated: due from the start of its countdown, so now
			case b.Tolerations[i].TolerationSeconds == nil:
				continue
			default:
				due = start.Add(time.Duration(max(*b.Tolerations[i].TolerationSeconds, 0)) * time.Second)
			}
			if !found || due.Before(best) {
				best, found = due, true
			}
		}
	}
	return best, found
}

func (r *fleetRun) run(steps int) {
	for range steps {
		if r.rng.IntN(2) == 0 {
			r.change()
		} else {
			d := time.Duration(1+r.rng.IntN(40)) * time.Second
			r.clk.Step(d)
			r.trace = append(r.trace, "step "+d.String())
		}
		synctest.Wait()
		r.check()
	}
	if r.t.Failed() {
		r.t.Logf("trace: %q", r.trace)
	}
}

// check compares what was acted on since the last check, and when, with the reference at
// the clock's time: the change or step since then is the only thing that happened.
func (r *fleetRun) check() {
	r.t.Helper()
	now, last := r.clk.Now(), r.trace[len(r.trace)-1]
	for name := range r.bindings {
		acted := r.actedOn(name)
		if len(acted) > 1 {
			r.t.Fatalf("after %q: %s acted on %d times (%v), want at most once", last, name, len(acted), acted)
		}
		if r.settled[name] {
			continue
		}
		due, ok := r.deadline(name)
		switch {
		case len(acted) == 1 && !acted[0].Equal(now):
			r.t.Fatalf("after %q: %s acted on at +%v, want +%v, the time of this check", last, name, acted[0].Sub(t0), now.Sub(t0))
		case len(acted) == 1 && (!ok || due.After(now)):
			r.t.Fatalf("after %q: %s acted on at +%v, before its deadline (+%v, %v)", last, name, now.Sub(t0), due.Sub(t0), ok)
		case len(acted) == 0 && ok && !due.After(now):
			r.t.Fatalf("after %q: %s not acted on at +%v, though due at +%v", last, name, now.Sub(t0), due.Sub(t0))
		}
		r.settled[name] = len(acted) == 1
	}
}

// TestDeviceRules: with Options.Tolerations.Rules = DeviceRules, the bindings' tolerations
// count as kube's device taint controller counts them (and those with an empty effect too),
// a forever one wins over a finite one wherever it stands, else the shortest.
func TestDeviceRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, engine.Options{Tolerations: tolerations.Options{Rules: tolerations.DeviceRules}})
		f.holder("gpu-0", taint("ecc", t0))
		f.holder("gpu-1", taint("ecc", t0))
		synctest.Wait()
		anyEffect := v1.Toleration{Key: "ecc", Operator: v1.TolerationOpExists} // no effect: matches NoExecute
		f.target("empty-effect", engine.Binding{Holder: "gpu-0", Tolerations: []v1.Toleration{anyEffect}})
		f.target("forever-second", engine.Binding{Holder: "gpu-0", Tolerations: []v1.Toleration{tolFor("ecc", 30), tolForever("ecc")}})
		f.target("shortest", engine.Binding{Holder: "gpu-0", Tolerations: []v1.Toleration{tolFor("ecc", 600), tolFor("ecc", 60)}},
			engine.Binding{Holder: "gpu-1", Tolerations: []v1.Toleration{tolFor("ecc", 120)}})
		synctest.Wait()
		if got := f.actedOn("empty-effect"); len(got) != 0 {
			t.Errorf("empty-effect: acted on at %v, want never: a toleration without effect matches every effect", got)
		}
		f.step(time.Minute - time.Nanosecond)
		if got := f.actedOn("shortest"); len(got) != 0 {
			t.Errorf("shortest: acted on at %v, before +1m0s", got)
		}
		f.step(time.Nanosecond)
		if got := f.actedOn("shortest"); !slices.Equal(got, []time.Time{t0.Add(time.Minute)}) {
			t.Errorf("shortest: acted on at %v, want at +1m0s, the shortest over both devices", got)
		}
		f.step(time.Hour)
		if got := f.actedOn("forever-second"); len(got) != 0 {
			t.Errorf("forever-second: acted on at %v, want never: a forever toleration wins", got)
		}
	})
}
