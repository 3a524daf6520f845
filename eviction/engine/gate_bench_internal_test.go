package engine

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkGateAdmit measures what the gate adds to an eviction that goes at once, the
// common case with budgets on: one admit, with a rate so high that nothing waits. "rate"
// has Options.RateLimit alone; "all" adds a per-taint limit and a brake that counts 5,000
// nodes and never pauses (fraction 1), and passes the taint keys that make the pod due.
func BenchmarkGateAdmit(b *testing.B) {
	high := Limit{PerSecond: 1e9, Burst: 1e6}
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"rate", Options{RateLimit: high}},
		{"all", Options{RateLimit: high, TaintRateLimits: map[string]Limit{keyU: high}, Brake: Brake{Fraction: 1, ZoneFraction: 1}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g := newGate(tc.opts)
			if g.brake != nil {
				for i := range 5000 {
					h := brakeHolder(fmt.Sprintf("n-%d", i), fmt.Sprintf("z-%d", i%3), keyU)
					g.holderUpdated(h.Name, h.Group, h.Taints)
				}
			}
			causes := []cause{{key: keyU, group: "z-1"}}
			ref := Ref{Namespace: "ns", Name: "pod"}
			now := time.Now().UnixNano()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if h, d := g.admit(ref, nil, causes, now+int64(i)); d.wait || h != nil {
					b.Fatalf("admit %d: waits until %v", i, d.until)
				}
			}
		})
	}
}
