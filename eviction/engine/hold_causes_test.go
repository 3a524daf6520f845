package engine_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestHeldEvictionFollowsItsCauses: an eviction the brake holds for one taint key, whose
// target then stays due for another key only (its holder loses the first taint and has a
// second one it does not tolerate), is asked again: the second key is not paused, so it
// goes, though the first key is still paused elsewhere. (The model test found it: such an
// eviction kept waiting for the first key's release.)
func TestHeldEvictionFollowsItsCauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(t0)
		src := &evictiontest.Source{}
		act := &actCalls{}
		e := startEngine(t, engine.ActuatorFunc(act.act), src, engine.Options{Clock: clk, Brake: engine.Brake{Fraction: 0.5}})
		synced(e) // fed live
		set := func(h engine.Holder) {
			src.SetHolder(h)
			e.HolderUpdated(h)
		}
		for i := range 5 {
			h := engine.Holder{Name: fmt.Sprint("h", i)}
			if i < 4 {
				h.Taints = []v1.Taint{taint("a", t0)} // a on 4 of 5: paused
			}
			set(h)
		}
		synctest.Wait()
		tg := engine.Target{Key: types.NamespacedName{Namespace: "ns", Name: "web"}, UID: "web",
			Bindings: []engine.Binding{{Holder: "h0"}}}
		src.SetTarget(tg)
		e.TargetUpdated(tg)
		synctest.Wait()
		if p := e.Pending(); len(p) != 1 || p[0].Delayed != engine.ReasonPaused {
			t.Fatalf("pending %v, want web paused by the brake on a", p)
		}
		set(engine.Holder{Name: "h0", Taints: []v1.Taint{taint("b", t0)}}) // a on 3 of 5: still paused; b on 1
		synctest.Wait()
		clk.Step(time.Minute)
		synctest.Wait()
		if got := act.calls(); len(got) != 1 {
			t.Errorf("web is due for b alone, which the brake does not pause: acted on %v, want web; pending %v", got, e.Pending())
		}
	})
}
