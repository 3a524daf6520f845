package engine

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine/internal/budget"
)

// oneSource is a Source of one target on one holder, fixed.
type oneSource struct {
	t Target
	h Holder
}

func (s oneSource) Target(types.NamespacedName) (Target, bool, error) { return s.t, true, nil }
func (s oneSource) TargetsOn(string) ([]Target, error)                { return []Target{s.t}, nil }
func (s oneSource) Holder(string) (Holder, bool, error)               { return s.h, true, nil }
func (s oneSource) Locate(t Target) (types.NamespacedName, string)    { return t.Key, "n" }
func (s oneSource) Describe(t Target, d *Target) {
	bs := append(d.Bindings, t.Bindings...)
	*d = t
	d.Bindings = bs
}

// holdAll is a toy budget, as budget/doc.go says one is added: one type, its own reason.
type holdAll struct{}

func (holdAll) Admit(*budget.Request, any) (budget.Verdict, any) {
	return budget.Verdict{Wait: true, Scope: budget.Scope{Kind: 100}, Reason: "Toy"}, nil
}
func (holdAll) Release(any, int64) {}

// TestStatsCountEveryReason: a budget with a reason of its own (one added to the gate as
// package budget says a budget is added) is counted in Stats.Delayed, so that
// Stats().Pending() agrees with Pending(). (A second reader found Stats counting a fixed
// list of reasons.)
func TestStatsCountEveryReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
		clk := testclock.NewFakeClock(t0)
		h := Holder{Name: "n", Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: t0}}}}
		tg := Target{Key: types.NamespacedName{Namespace: "ns", Name: "a"}, UID: "a", Bindings: []Binding{{Holder: "n"}}}
		e, err := New(ActuatorFunc(func(context.Context, Ref) error { return nil }), Source[Target](oneSource{tg, h}), Options{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		e.gate = budget.NewGate[*eviction](holdAll{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.Run(ctx)
		e.HolderUpdated(h)
		e.TargetUpdated(tg)
		if err := e.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := e.Stats().Pending(), len(e.Pending()); got != want {
			t.Errorf("Stats().Pending() = %d (%+v), len(Pending()) = %d (%v): the toy budget's hold is not counted", got, e.Stats(), want, e.Pending())
		}
	})
}
