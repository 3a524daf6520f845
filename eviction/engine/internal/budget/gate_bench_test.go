package budget

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkGateAdmit measures what the gate adds to an eviction that goes at once, the
// common case with budgets on: one Admit, with a rate so high that nothing waits. "rate"
// has the overall rate alone; "all" adds a per-taint rate and a brake that counts 5,000
// holders and never pauses (fraction 1), and passes the taint keys that make the target
// due.
func BenchmarkGateAdmit(b *testing.B) {
	high := Rate{PerSecond: 1e9, Burst: 1e6}
	for _, tc := range []struct {
		name  string
		brake bool
		keys  map[string]Rate
	}{
		{"rate", false, nil},
		{"all", true, map[string]Rate{keyU: high}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var bs []Budget
			if tc.brake {
				bs = append(bs, NewBrake(BrakeRules{Fraction: 1, GroupFraction: 1}))
			}
			g := NewGate[uint64](append(bs, NewTokens(high, tc.keys, nil))...)
			taint := []v1.Taint{{Key: keyU, Effect: v1.TaintEffectNoExecute}}
			for i := range 5000 {
				g.HolderUpdated(fmt.Sprintf("n-%d", i), fmt.Sprintf("z-%d", i%3), taint, false)
			}
			r := &Request{Key: types.NamespacedName{Namespace: "ns", Name: "pod"}, Causes: []Cause{{Key: keyU, Group: "z-1"}}}
			now := time.Now().UnixNano()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.Now = now + int64(i)
				if h, d := g.Admit(1, r, nil, false); d.Wait || h != nil {
					b.Fatalf("Admit %d: waits until %v", i, d.Until)
				}
			}
		})
	}
}
