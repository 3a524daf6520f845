package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/eviction/engine/internal/budget"
	"github.com/taintevict/taintevict/tolerations"
)

var decideNow = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

func ago(d time.Duration) *metav1.Time { t := metav1.NewTime(decideNow.Add(-d)); return &t }

func secs(s int64) *int64 { return &s }

func noExec(key string, added time.Duration) v1.Taint {
	return v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute, TimeAdded: ago(added)}
}

func tolFor(key string, s *int64) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: s}
}

// bound makes a view of one target bound to holders, each binding with its holder's
// taints (found: whether the holder exists) and tolerations.
type bound struct {
	holder string
	found  bool
	taints []v1.Taint
	tols   []v1.Toleration
}

func viewOf(bs ...bound) *view {
	v := &view{exists: true, target: Target{UID: "u"}}
	for _, b := range bs {
		v.target.Bindings = append(v.target.Bindings, Binding{Holder: b.holder, Tolerations: b.tols})
		v.holders = append(v.holders, holderView{found: b.found, taints: b.taints, group: "g-" + b.holder})
	}
	return v
}

func TestDecide(t *testing.T) {
	untolerated := noExec("a", time.Minute)
	tests := []struct {
		name   string
		v      *view
		openOn string
		want   decision
	}{
		{"no target", &view{}, "", decision{Stay: true, Reason: ReasonTargetDeleted}},
		{"leaving", &view{exists: true, target: Target{Leaving: "Done"}}, "", decision{Stay: true, Skip: true, Reason: "Done"}},
		{"no bindings", &view{exists: true}, "", decision{Stay: true, Reason: ReasonUnbound}},
		{"untainted", viewOf(bound{holder: "n", found: true}), "", decision{Stay: true, Reason: ReasonNotTainted}},
		{"untolerated: now", viewOf(bound{holder: "n", found: true, taints: []v1.Taint{untolerated}}), "",
			decision{At: decideNow, Holder: "n"}},
		{"tolerated forever", viewOf(bound{holder: "n", found: true, taints: []v1.Taint{untolerated}, tols: []v1.Toleration{tolFor("a", nil)}}), "",
			decision{Stay: true, Reason: ReasonTolerated}},
		{"tolerated 300 s from a minute ago", viewOf(bound{holder: "n", found: true, taints: []v1.Taint{untolerated}, tols: []v1.Toleration{tolFor("a", secs(300))}}), "",
			decision{At: decideNow.Add(4 * time.Minute), Holder: "n"}},
		{"the earliest binding decides", viewOf(
			bound{holder: "n", found: true, taints: []v1.Taint{untolerated}, tols: []v1.Toleration{tolFor("a", secs(300))}},
			bound{holder: "d", found: true, taints: []v1.Taint{noExec("ecc", 0)}, tols: []v1.Toleration{tolFor("ecc", secs(60))}},
		), "", decision{At: decideNow.Add(time.Minute), Holder: "d"}},
		{"the open eviction's holder was deleted", viewOf(bound{holder: "n", found: false}), "n",
			decision{Stay: true, Reason: ReasonHolderDeleted}},
		{"another holder was deleted", viewOf(bound{holder: "n", found: true}, bound{holder: "d", found: false}), "n",
			decision{Stay: true, Reason: ReasonNotTainted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (rules{}).decide(tt.v, tt.openOn, decideNow, decideNow); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecideAllocatesNothing(t *testing.T) {
	v := viewOf(
		bound{holder: "n", found: true, taints: []v1.Taint{noExec("a", time.Minute)}, tols: []v1.Toleration{tolFor("a", secs(300))}},
		bound{holder: "d", found: true, taints: []v1.Taint{noExec("ecc", 0)}},
	)
	r := rules{}
	if got := testing.AllocsPerRun(100, func() { r.decide(v, "n", decideNow, decideNow) }); got != 0 {
		t.Errorf("decide: %v allocations, want 0", got)
	}
}

// FuzzDecide checks decide, on views made from the fuzzer's bytes, against its definition
// one taint at a time: the target is due at the earliest deadline that tolerations.Deadline
// (or ObservedDeadline) gives any single NoExecute taint of any binding's holder, on the
// first binding that has it; it stays when every one of them stays, for Tolerated when some
// holder is tainted, and otherwise for HolderDeleted when the open eviction's holder is
// gone, NotTainted when it is not.
func FuzzDecide(f *testing.F) {
	f.Add(uint64(1), uint64(2), false)
	f.Add(uint64(7), uint64(11), true)
	f.Add(uint64(0), uint64(0), false)
	f.Fuzz(func(t *testing.T, seed1, seed2 uint64, observed bool) {
		r := rand.New(rand.NewPCG(seed1, seed2))
		v := randomView(r)
		rl := rules{}
		if observed {
			rl.source = FromObservation
		}
		openOn := ""
		if len(v.target.Bindings) > 0 && r.IntN(2) == 0 {
			openOn = v.target.Bindings[r.IntN(len(v.target.Bindings))].Holder
		}
		since := decideNow.Add(-time.Duration(r.IntN(600)) * time.Second)
		got := rl.decide(v, openOn, since, decideNow)
		if want := decideOneTaintAtATime(rl, v, openOn, since); got != want {
			t.Fatalf("view %s, open on %q: got %+v, want %+v", describeView(v), openOn, got, want)
		}
		// Causes are the taints whose single deadline is now or past, each once.
		causes := rl.causes(nil, v, since, decideNow)
		for i, c := range causes {
			if slices.Contains(causes[:i], c) {
				t.Fatalf("cause %+v twice in %v", c, causes)
			}
		}
		if due := !got.Stay && !got.At.After(decideNow); due != (len(causes) > 0) {
			t.Fatalf("view %s: due now %v, but causes %v", describeView(v), due, causes)
		}
	})
}

// decideOneTaintAtATime is decide's definition, written one taint at a time.
func decideOneTaintAtATime(rl rules, v *view, openOn string, since time.Time) decision {
	if len(v.target.Bindings) == 0 {
		return decision{Stay: true, Reason: ReasonUnbound}
	}
	var (
		best    decision
		found   bool
		tainted bool
	)
	for i, b := range v.target.Bindings {
		for j := range v.holders[i].taints {
			tainted = true
			e := rl.evaluate(v.holders[i].taints[j:j+1], b.Tolerations, since, decideNow)
			if e.Verdict == tolerations.Stay {
				continue
			}
			if !found || e.At.Before(best.At) {
				best, found = decision{At: e.At.In(decideNow.Location()), Holder: b.Holder}, true
			}
		}
	}
	switch {
	case found:
		return best
	case tainted:
		return decision{Stay: true, Reason: ReasonTolerated}
	case openOn != "" && v.lost(openOn):
		return decision{Stay: true, Reason: ReasonHolderDeleted}
	}
	return decision{Stay: true, Reason: ReasonNotTainted}
}

// randomView makes a target with up to three bindings, each holder with up to three
// taints (a few keys, NoExecute mostly, TimeAdded from an hour back to now) and each
// binding with up to three tolerations (keys, operators and seconds of every kind).
func randomView(r *rand.Rand) *view {
	keys := []string{"a", "b", "c"}
	v := &view{exists: true, target: Target{UID: "u"}}
	for i := range r.IntN(4) {
		var taints []v1.Taint
		for range r.IntN(4) {
			tn := noExec(keys[r.IntN(len(keys))], time.Duration(r.IntN(3600))*time.Second)
			if r.IntN(5) == 0 {
				tn.Value = "x"
			}
			taints = append(taints, tn)
		}
		var tols []v1.Toleration
		for range r.IntN(4) {
			tl := tolFor(keys[r.IntN(len(keys))], nil)
			switch r.IntN(6) {
			case 0:
				tl.Key = "" // every key
			case 1:
				tl.Operator, tl.Value = v1.TolerationOpEqual, "x"
			case 2:
				tl.Operator = "Bogus"
			}
			if r.IntN(4) == 0 {
				tl.Effect = ""
			}
			switch r.IntN(5) {
			case 0:
			case 1:
				tl.TolerationSeconds = secs(-int64(r.IntN(10)))
			default:
				tl.TolerationSeconds = secs(int64(r.IntN(7200)))
			}
			tols = append(tols, tl)
		}
		name := fmt.Sprint("h", i)
		v.target.Bindings = append(v.target.Bindings, Binding{Holder: name, Tolerations: tols})
		v.holders = append(v.holders, holderView{found: r.IntN(4) != 0, taints: taints, group: "g"})
	}
	return v
}

func describeView(v *view) string {
	s := ""
	for i, b := range v.target.Bindings {
		s += fmt.Sprintf("[%s found=%v taints=%v tols=%v]", b.Holder, v.holders[i].found, v.holders[i].taints, b.Tolerations)
	}
	return s
}

func TestCauses(t *testing.T) {
	taints := []v1.Taint{
		noExec("a", time.Minute),
		noExec("b", time.Minute),
		{Key: "b", Value: "x", Effect: v1.TaintEffectNoExecute, TimeAdded: ago(time.Minute)},
		{Key: "c", Effect: v1.TaintEffectNoSchedule, TimeAdded: ago(time.Minute)},
	}
	tests := []struct {
		name  string
		tols  []v1.Toleration
		src   DeadlineSource
		since time.Time
		want  []string
	}{
		{"nothing tolerated: every NoExecute key, once", nil, FromTimeAdded, time.Time{}, []string{"a", "b"}},
		{"a tolerated for long, b not at all", []v1.Toleration{tolFor("a", secs(3600))}, FromTimeAdded, time.Time{}, []string{"b"}},
		{"a ran out, b for long", []v1.Toleration{tolFor("a", secs(30)), tolFor("b", secs(3600))}, FromTimeAdded, time.Time{}, []string{"a"}},
		{"both ran out", []v1.Toleration{tolFor("a", secs(30)), tolFor("b", secs(60))}, FromTimeAdded, time.Time{}, []string{"a", "b"}},
		{"none due yet", []v1.Toleration{tolFor("a", secs(90)), tolFor("b", secs(90))}, FromTimeAdded, time.Time{}, nil},
		{"FromObservation counts from since, not TimeAdded", []v1.Toleration{tolFor("a", secs(30)), tolFor("b", secs(90))}, FromObservation, decideNow.Add(-45 * time.Second), []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := viewOf(bound{holder: "h", found: true, taints: taints, tols: tt.tols})
			v.holders[0].group = "g"
			var keys []string
			for _, c := range (rules{source: tt.src}).causes(nil, v, tt.since, decideNow) {
				if c.Group != "g" || c.Holder != "h" {
					t.Errorf("cause %v: got holder %q and group %q, want h and g", c, c.Holder, c.Group)
				}
				keys = append(keys, c.Key)
			}
			if !slices.Equal(keys, tt.want) {
				t.Errorf("got %v, want %v", keys, tt.want)
			}
		})
	}

	// A target on two holders: each binding has its own tolerations and its holder's group;
	// a key that is due on both comes once per holder.
	t.Run("two bindings", func(t *testing.T) {
		v := viewOf(
			bound{holder: "h1", found: true, taints: taints, tols: []v1.Toleration{tolFor("a", secs(3600))}},
			bound{holder: "h2", found: true, taints: taints, tols: []v1.Toleration{tolFor("a", secs(30)), tolFor("b", secs(3600))}},
		)
		got := rules{}.causes(nil, v, time.Time{}, decideNow)
		want := []budget.Cause{{Holder: "h1", Key: "b", Group: "g-h1"}, {Holder: "h2", Key: "a", Group: "g-h2"}}
		if !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
}
