package tolerations_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/tolerations"
)

var deviceRules = tolerations.Options{Rules: tolerations.DeviceRules}

// kubeDeviceTolerates is the reference for device matching inside this module, which does not
// import k8s.io/dynamic-resource-allocation: resourceclaim.ToleratesTaint is k8s.io/api's
// ToleratesTaint without Lt and Gt, which is that function with the comparison operators off.
// The strings are cast as they are, with no mapping of operators. The bench module checks
// ToleratesDevice against resourceclaim.ToleratesTaint itself.
func kubeDeviceTolerates(tol *resourcev1.DeviceToleration, taint *resourcev1.DeviceTaint) bool {
	t := castToleration(*tol)
	x := castTaint(*taint)
	return t.ToleratesTaint(discard, &x, false)
}

func castTaint(x resourcev1.DeviceTaint) v1.Taint {
	return v1.Taint{Key: x.Key, Value: x.Value, Effect: v1.TaintEffect(x.Effect), TimeAdded: x.TimeAdded}
}

func castToleration(t resourcev1.DeviceToleration) v1.Toleration {
	return v1.Toleration{Key: t.Key, Operator: v1.TolerationOperator(t.Operator), Value: t.Value, Effect: v1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds}
}

func castTaints(in []resourcev1.DeviceTaint) []v1.Taint {
	out := make([]v1.Taint, len(in))
	for i := range in {
		out[i] = castTaint(in[i])
	}
	return out
}

func castTolerations(in []resourcev1.DeviceToleration) []v1.Toleration {
	out := make([]v1.Toleration, len(in))
	for i := range in {
		out[i] = castToleration(in[i])
	}
	return out
}

// bruteDeviceDeadline is Deadline's documented result under DeviceRules, computed the slow,
// obvious way from kube's claimEvictionTime (pkg/controller/devicetainteviction), with the
// one documented difference (a toleration with an empty effect counts too): per NoExecute
// taint, the tolerations that tolerate it (so of effect NoExecute or empty) count; one with nil
// seconds ignores the taint; otherwise the taint is due at its start plus the smallest
// max(seconds, 0), or at its start with none. The start is the package's (TimeAdded, else
// fallback, else now; at most now) and seconds are clamped as the package documents. Matching
// is k8s.io/api's with the comparison operators off, on the raw strings.
func bruteDeviceDeadline(taints []v1.Taint, tols []v1.Toleration, now, fallback time.Time) tolerations.Eviction {
	type candidate struct {
		taint *v1.Taint
		tol   *v1.Toleration // nil: no toleration counts
		due   time.Time
	}
	var all []candidate
	for i := range taints {
		taint := &taints[i]
		if taint.Effect != v1.TaintEffectNoExecute {
			continue
		}
		var counting []*v1.Toleration
		for j := range tols {
			// ToleratesTaint matches an empty effect with every effect; kube's controller
			// also asks for Effect == NoExecute here, which this package does not.
			if tols[j].ToleratesTaint(discard, taint, false) {
				counting = append(counting, &tols[j])
			}
		}
		forever := false
		var shortest *v1.Toleration
		for _, tol := range counting {
			if tol.TolerationSeconds == nil {
				forever = true
				break
			}
			if shortest == nil || max(*tol.TolerationSeconds, 0) < max(*shortest.TolerationSeconds, 0) {
				shortest = tol
			}
		}
		if forever {
			continue
		}
		start := fallback
		if taint.TimeAdded != nil && !taint.TimeAdded.Time.IsZero() {
			start = taint.TimeAdded.Time
		}
		if start.IsZero() || start.After(now) {
			start = now
		}
		c := candidate{taint: taint, due: start}
		if shortest != nil {
			c.tol, c.due = shortest, exactAfter(start, *shortest.TolerationSeconds)
		}
		all = append(all, c)
	}
	// A taint that no toleration counts for is due at its start, which is at most now: the
	// package reports the first such taint, with no toleration.
	for _, c := range all {
		if c.tol == nil {
			return tolerations.Eviction{Verdict: tolerations.EvictNow, At: now, Taint: c.taint}
		}
	}
	if len(all) == 0 {
		return tolerations.Eviction{}
	}
	best := all[0]
	for _, c := range all[1:] {
		if c.due.Before(best.due) {
			best = c
		}
	}
	if !best.due.After(now) {
		return tolerations.Eviction{Verdict: tolerations.EvictNow, At: now, Taint: best.taint, Toleration: best.tol}
	}
	return tolerations.Eviction{Verdict: tolerations.EvictAt, At: best.due, Taint: best.taint, Toleration: best.tol}
}

func TestRulesString(t *testing.T) {
	tests := []struct {
		r    tolerations.Rules
		want string
	}{
		{tolerations.NodeRules, "NodeRules"},
		{tolerations.DeviceRules, "DeviceRules"},
		{2, "Rules(2)"},
		{255, "Rules(255)"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			got := tc.r.String()
			assert.Equal(t, tc.want, got, "got %q, want %q", got, tc.want)
		})
	}
	t.Run("zero value is NodeRules", func(t *testing.T) {
		var o tolerations.Options
		assert.Equal(t, tolerations.NodeRules, o.Rules, "got %v, want NodeRules", o.Rules)
	})
}

func TestDeviceTaints(t *testing.T) {
	at := &metav1.Time{Time: t0}
	t.Run("nil", func(t *testing.T) {
		got := tolerations.DeviceTaints(nil)
		assert.Nil(t, got, "got %v, want nil", got)
	})
	t.Run("empty", func(t *testing.T) {
		got := tolerations.DeviceTaints([]resourcev1.DeviceTaint{})
		assert.NotNil(t, got, "got nil, want an empty slice")
		assert.Empty(t, got, "got %v, want empty", got)
	})
	t.Run("fields", func(t *testing.T) {
		in := []resourcev1.DeviceTaint{
			{Key: "gpu.example.com/unhealthy", Value: "ecc", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: at},
			{Key: "k", Effect: resourcev1.DeviceTaintEffectNoSchedule},
			{Key: "k", Effect: resourcev1.DeviceTaintEffectNone},
			{Key: "k", Effect: "SomeFutureEffect"},
			{Key: "k", Effect: ""},
		}
		want := []v1.Taint{
			{Key: "gpu.example.com/unhealthy", Value: "ecc", Effect: v1.TaintEffectNoExecute, TimeAdded: at},
			{Key: "k", Effect: v1.TaintEffectNoSchedule},
			{Key: "k", Effect: "None"},
			{Key: "k", Effect: "SomeFutureEffect"},
			{Key: "k", Effect: ""},
		}
		got := tolerations.DeviceTaints(in)
		assert.Equal(t, want, got, "got %+v, want %+v", got, want)
		assert.Same(t, at, got[0].TimeAdded, "got a copied TimeAdded, want the same pointer")
		assert.Nil(t, tolerations.NoExecuteTaints(got[1:]), "got NoExecute taints among None, NoSchedule and unknown effects, want none")
	})
}

func TestDeviceTolerations(t *testing.T) {
	s := secs(30)
	t.Run("nil", func(t *testing.T) {
		got := tolerations.DeviceTolerations(nil)
		assert.Nil(t, got, "got %v, want nil", got)
	})
	t.Run("empty", func(t *testing.T) {
		got := tolerations.DeviceTolerations([]resourcev1.DeviceToleration{})
		assert.NotNil(t, got, "got nil, want an empty slice")
		assert.Empty(t, got, "got %v, want empty", got)
	})
	t.Run("fields", func(t *testing.T) {
		in := []resourcev1.DeviceToleration{{Key: "k", Operator: resourcev1.DeviceTolerationOpEqual, Value: "v", Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: s}}
		want := []v1.Toleration{{Key: "k", Operator: v1.TolerationOpEqual, Value: "v", Effect: v1.TaintEffectNoExecute, TolerationSeconds: s}}
		got := tolerations.DeviceTolerations(in)
		assert.Equal(t, want, got, "got %+v, want %+v", got, want)
		assert.Same(t, s, got[0].TolerationSeconds, "got copied seconds, want the same pointer")
	})
	ops := []struct {
		in      resourcev1.DeviceTolerationOperator
		want    v1.TolerationOperator
		matches bool // against an equal taint
	}{
		{"", "", true},
		{"Equal", v1.TolerationOpEqual, true},
		{"Exists", v1.TolerationOpExists, true},
		{"Lt", "device:Lt", false},
		{"Gt", "device:Gt", false},
		{"In", "device:In", false},
		{"exists", "device:exists", false},
		{"device:Exists", "device:device:Exists", false},
	}
	for _, tc := range ops {
		t.Run("operator "+string(tc.in), func(t *testing.T) {
			got := tolerations.DeviceTolerations([]resourcev1.DeviceToleration{{Key: "n", Operator: tc.in, Value: "5"}})
			require.Len(t, got, 1)
			assert.Equal(t, tc.want, got[0].Operator, "got operator %q, want %q", got[0].Operator, tc.want)
			// Taint values equal to, below and above 5: a Lt or Gt that matched would show.
			for _, value := range []string{"5", "3", "7"} {
				taint := v1.Taint{Key: "n", Value: value, Effect: v1.TaintEffectNoExecute}
				wantMatch := tc.matches && (value == "5" || tc.in == "Exists")
				for _, opts := range allOptions() {
					ok := tolerations.Tolerates(&got[0], &taint, opts)
					assert.Equal(t, wantMatch, ok, "value %s, %+v: got %v, want %v", value, opts, ok, wantMatch)
				}
			}
		})
	}
}

// allOptions is every combination of the Options fields.
func allOptions() []tolerations.Options {
	var out []tolerations.Options
	for _, r := range []tolerations.Rules{tolerations.NodeRules, tolerations.DeviceRules} {
		for _, cmp := range []bool{false, true} {
			out = append(out, tolerations.Options{ComparisonOperators: cmp, Rules: r})
		}
	}
	return out
}

func TestToleratesDevice(t *testing.T) {
	noExec := resourcev1.DeviceTaint{Key: "k", Value: "v", Effect: resourcev1.DeviceTaintEffectNoExecute}
	tests := []struct {
		name  string
		tol   *resourcev1.DeviceToleration
		taint *resourcev1.DeviceTaint
		want  bool
	}{
		{"nil toleration", nil, &noExec, false},
		{"nil taint", &resourcev1.DeviceToleration{Operator: "Exists"}, nil, false},
		{"both nil", nil, nil, false},
		{"exists all", &resourcev1.DeviceToleration{Operator: "Exists"}, &noExec, true},
		{"equal", &resourcev1.DeviceToleration{Key: "k", Operator: "Equal", Value: "v"}, &noExec, true},
		{"empty operator is Equal", &resourcev1.DeviceToleration{Key: "k", Value: "v"}, &noExec, true},
		{"empty operator, other value", &resourcev1.DeviceToleration{Key: "k", Value: "w"}, &noExec, false},
		{"other key", &resourcev1.DeviceToleration{Key: "j", Operator: "Exists"}, &noExec, false},
		{"empty key with Equal matches every key with that value", &resourcev1.DeviceToleration{Value: "v"}, &noExec, true},
		{"effect equal", &resourcev1.DeviceToleration{Key: "k", Operator: "Exists", Effect: "NoExecute"}, &noExec, true},
		{"effect differs", &resourcev1.DeviceToleration{Key: "k", Operator: "Exists", Effect: "NoSchedule"}, &noExec, false},
		{"effect None against None", &resourcev1.DeviceToleration{Operator: "Exists", Effect: "None"}, &resourcev1.DeviceTaint{Effect: "None"}, true},
		{"Lt never", &resourcev1.DeviceToleration{Key: "k", Operator: "Lt", Value: "9"}, &resourcev1.DeviceTaint{Key: "k", Value: "1", Effect: "NoExecute"}, false},
		{"Gt never", &resourcev1.DeviceToleration{Key: "k", Operator: "Gt", Value: "0"}, &resourcev1.DeviceTaint{Key: "k", Value: "1", Effect: "NoExecute"}, false},
		{"unknown operator never", &resourcev1.DeviceToleration{Key: "k", Operator: "In", Value: "v"}, &noExec, false},
		{"operator case matters", &resourcev1.DeviceToleration{Key: "k", Operator: "exists"}, &noExec, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tolerations.ToleratesDevice(tc.tol, tc.taint)
			assert.Equal(t, tc.want, got, "got %v, want %v", got, tc.want)
			if tc.tol != nil && tc.taint != nil {
				ref := kubeDeviceTolerates(tc.tol, tc.taint)
				assert.Equal(t, tc.want, ref, "reference: got %v, want %v", ref, tc.want)
			}
		})
	}
}

// Small alphabets for exhaustive and random device cases: they collide often and hold every
// edge of the matching (empty strings, None, unknown effects and operators, Lt and Gt).
var (
	devKeys      = []string{"", "a", "b"}
	devValues    = []string{"", "1", "5", "x"}
	devEffects   = []resourcev1.DeviceTaintEffect{"", "NoExecute", "NoSchedule", "None", "PreferNoSchedule", "Evict"}
	devOperators = []resourcev1.DeviceTolerationOperator{"", "Equal", "Exists", "Lt", "Gt", "In", "exists", "device:Equal"}
	devSeconds   = []int64{0, -1, 1, 30, 60, 300, 3600, 86400, math.MaxInt64, math.MinInt64}
)

// TestDeviceConversionAgrees checks, for every toleration and taint over the small
// alphabets, that Tolerates on the conversions agrees with ToleratesDevice under every
// Options, and that ToleratesDevice agrees with the reference.
func TestDeviceConversionAgrees(t *testing.T) {
	matched, total := 0, 0
	for _, tk := range devKeys {
		for _, op := range devOperators {
			for _, tv := range devValues {
				for _, te := range devEffects {
					tol := resourcev1.DeviceToleration{Key: tk, Operator: op, Value: tv, Effect: te}
					for _, xk := range devKeys {
						for _, xv := range devValues {
							for _, xe := range devEffects {
								taint := resourcev1.DeviceTaint{Key: xk, Value: xv, Effect: xe}
								want := tolerations.ToleratesDevice(&tol, &taint)
								if ref := kubeDeviceTolerates(&tol, &taint); want != ref {
									t.Fatalf("ToleratesDevice(%+v, %+v): got %v, want %v (reference)", tol, taint, want, ref)
								}
								ctol := tolerations.DeviceTolerations([]resourcev1.DeviceToleration{tol})
								ctaint := tolerations.DeviceTaints([]resourcev1.DeviceTaint{taint})
								for _, opts := range allOptions() {
									if got := tolerations.Tolerates(&ctol[0], &ctaint[0], opts); got != want {
										t.Fatalf("Tolerates(%+v, %+v, %+v) on the conversions: got %v, want %v (ToleratesDevice)", ctol[0], ctaint[0], opts, got, want)
									}
								}
								total++
								if want {
									matched++
								}
							}
						}
					}
				}
			}
		}
	}
	assert.Greater(t, matched, total/50, "got %d matching pairs of %d, want more than %d", matched, total, total/50)
}

func TestToleratesNoComparisonUnderDeviceRules(t *testing.T) {
	taint := v1.Taint{Key: "n", Value: "3", Effect: v1.TaintEffectNoExecute}
	for _, op := range []v1.TolerationOperator{v1.TolerationOpLt, v1.TolerationOpGt} {
		tol := v1.Toleration{Key: "n", Operator: op, Value: "3"}
		if op == v1.TolerationOpLt {
			tol.Value = "5"
		} else {
			tol.Value = "1"
		}
		t.Run(string(op), func(t *testing.T) {
			node := tolerations.Tolerates(&tol, &taint, tolerations.Options{ComparisonOperators: true})
			require.True(t, node, "NodeRules with ComparisonOperators: got false, want true (the case must match there)")
			dev := tolerations.Tolerates(&tol, &taint, tolerations.Options{ComparisonOperators: true, Rules: tolerations.DeviceRules})
			assert.False(t, dev, "DeviceRules with ComparisonOperators: got true, want false")
		})
	}
}

func TestDeadlineDeviceRules(t *testing.T) {
	now := t0
	hourAgo := now.Add(-time.Hour)
	tol := func(key string, effect v1.TaintEffect, s *int64) v1.Toleration {
		return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: effect, TolerationSeconds: s}
	}
	ne := v1.TaintEffectNoExecute
	cmpDev := tolerations.Options{ComparisonOperators: true, Rules: tolerations.DeviceRules}
	tests := []evictionCase{
		{name: "no taints", now: now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1},
		{
			name:   "NoSchedule, None and unknown taints ignored",
			taints: []v1.Taint{{Key: "a", Effect: v1.TaintEffectNoSchedule}, {Key: "a", Effect: "None"}, {Key: "a", Effect: "Evict"}},
			now:    now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1,
		},
		{name: "untolerated", taints: []v1.Taint{noExecAt("a", hourAgo)}, now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1},
		{name: "forever", taints: []v1.Taint{noExecAt("a", hourAgo)}, tols: []v1.Toleration{tol("a", ne, nil)}, now: now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1},
		{
			name:   "finite",
			taints: []v1.Taint{noExecAt("a", now.Add(-100*time.Second))}, tols: []v1.Toleration{tol("a", ne, secs(300))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(200 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "forever wins over an earlier finite",
			taints: []v1.Taint{noExecAt("a", hourAgo)}, tols: []v1.Toleration{tol("a", ne, secs(60)), tol("a", ne, nil)},
			now: now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1,
		},
		{
			name:   "forever wins over a later finite",
			taints: []v1.Taint{noExecAt("a", hourAgo)}, tols: []v1.Toleration{tol("a", ne, nil), tol("a", ne, secs(60))},
			now: now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1,
		},
		{
			name:   "minimum over several, not the first",
			taints: []v1.Taint{noExecAt("a", now)}, tols: []v1.Toleration{tol("a", ne, secs(600)), tol("", ne, secs(60)), tol("a", ne, secs(300))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(time.Minute), wantTnt: 0, wantTol: 1,
		},
		{
			name:   "ties: the first of the shortest",
			taints: []v1.Taint{noExecAt("a", now)}, tols: []v1.Toleration{tol("a", ne, secs(600)), tol("a", ne, secs(60)), tol("", ne, secs(60))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(time.Minute), wantTnt: 0, wantTol: 1,
		},
		{
			name:   "empty-effect toleration counts: forever (kube evicts now)",
			taints: []v1.Taint{noExecAt("a", hourAgo)}, tols: []v1.Toleration{tol("a", "", nil)},
			now: now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1,
		},
		{
			name:   "empty-effect forever beats a NoExecute finite (kube: the finite)",
			taints: []v1.Taint{noExecAt("a", now)}, tols: []v1.Toleration{tol("a", ne, secs(60)), tol("", "", nil)},
			now: now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1,
		},
		{
			name:   "empty-effect finite counts, the shortest (kube: the NoExecute one)",
			taints: []v1.Taint{noExecAt("a", now)}, tols: []v1.Toleration{tol("a", ne, secs(600)), tol("a", "", secs(60))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(time.Minute), wantTnt: 0, wantTol: 1,
		},
		{
			name:   "empty-effect with another key does not count",
			taints: []v1.Taint{noExecAt("a", hourAgo)}, tols: []v1.Toleration{tol("b", "", nil)},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1,
		},
		{
			name:   "NoSchedule toleration does not count",
			taints: []v1.Taint{noExecAt("a", hourAgo)}, tols: []v1.Toleration{tol("a", v1.TaintEffectNoSchedule, nil)},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1,
		},
		{
			name:   "negative seconds: now",
			taints: []v1.Taint{noExecAt("a", now)}, tols: []v1.Toleration{tol("a", ne, secs(300)), tol("a", ne, secs(-5))},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 1,
		},
		{
			name:   "min int64 seconds: now",
			taints: []v1.Taint{noExecAt("a", now)}, tols: []v1.Toleration{tol("a", ne, secs(math.MinInt64))},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "zero and negative both count as 0: the first decides",
			taints: []v1.Taint{noExecAt("a", now)}, tols: []v1.Toleration{tol("a", ne, secs(0)), tol("a", ne, secs(-5))},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "max int64 seconds: the latest time, not overflowed",
			taints: []v1.Taint{noExecAt("a", now)}, tols: []v1.Toleration{tol("a", ne, secs(math.MaxInt64))},
			now: now, verdict: tolerations.EvictAt, at: latest, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "unknown operator does not tolerate",
			taints: []v1.Taint{noExecAt("a", now)}, tols: []v1.Toleration{{Key: "a", Operator: "In", Effect: ne}},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1,
		},
		{
			name:   "converted unknown device operator does not tolerate",
			taints: []v1.Taint{noExecAt("a", now)}, tols: []v1.Toleration{{Key: "a", Operator: "device:Exists", Effect: ne}},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1,
		},
		{
			name:   "Lt never matches, even with ComparisonOperators",
			taints: []v1.Taint{{Key: "n", Value: "3", Effect: ne, TimeAdded: added(now)}},
			tols:   []v1.Toleration{{Key: "n", Operator: v1.TolerationOpLt, Value: "5", Effect: ne, TolerationSeconds: secs(60)}},
			now:    now, opts: cmpDev, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1,
		},
		{
			name:   "Gt never matches, even with ComparisonOperators",
			taints: []v1.Taint{{Key: "n", Value: "3", Effect: ne, TimeAdded: added(now)}},
			tols:   []v1.Toleration{{Key: "n", Operator: v1.TolerationOpGt, Value: "1", Effect: ne}},
			now:    now, opts: cmpDev, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1,
		},
		{
			name:   "earliest over taints",
			taints: []v1.Taint{noExecAt("a", now.Add(-10*time.Second)), noExecAt("b", now.Add(-50*time.Second)), {Key: "c", Effect: v1.TaintEffectNoSchedule}},
			tols:   []v1.Toleration{tol("a", ne, secs(100)), tol("b", ne, secs(100))},
			now:    now, verdict: tolerations.EvictAt, at: now.Add(50 * time.Second), wantTnt: 1, wantTol: 1,
		},
		{
			name:   "one forever taint, one finite",
			taints: []v1.Taint{noExecAt("a", hourAgo), noExecAt("b", now)},
			tols:   []v1.Toleration{tol("a", ne, nil), tol("b", ne, secs(100)), tol("a", ne, secs(1))},
			now:    now, verdict: tolerations.EvictAt, at: now.Add(100 * time.Second), wantTnt: 1, wantTol: 1,
		},
		{
			name:   "second taint untolerated",
			taints: []v1.Taint{noExecAt("a", now), noExecAt("b", now)}, tols: []v1.Toleration{tol("a", ne, secs(60))},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 1, wantTol: -1,
		},
		{
			name:   "ran out",
			taints: []v1.Taint{noExecAt("a", now.Add(-400*time.Second))}, tols: []v1.Toleration{tol("a", ne, secs(300))},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "nil TimeAdded counts from fallback",
			taints: []v1.Taint{noExec("a")}, tols: []v1.Toleration{tol("a", ne, secs(300))},
			now: now, ref: now.Add(-100 * time.Second), verdict: tolerations.EvictAt, at: now.Add(200 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "nil TimeAdded and zero fallback count from now",
			taints: []v1.Taint{noExec("a")}, tols: []v1.Toleration{tol("a", ne, secs(300))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(300 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "TimeAdded in the future counts as now",
			taints: []v1.Taint{noExecAt("a", now.Add(time.Hour))}, tols: []v1.Toleration{tol("a", ne, secs(300))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(300 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "untolerated with TimeAdded in the future: now",
			taints: []v1.Taint{noExecAt("a", now.Add(time.Hour))},
			now:    now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts == (tolerations.Options{}) {
				tc.opts = deviceRules
			}
			got := tolerations.Deadline(tc.taints, tc.tols, tc.now, tc.ref, tc.opts)
			checkEviction(t, tc, got)
			want := bruteDeviceDeadline(tc.taints, tc.tols, tc.now, tc.ref)
			assert.Equal(t, want, got, "got %+v, want brute force %+v", got, want)
		})
	}
}

// TestDeviceRulesDifferFromNodeRules pins the difference, the order, on one input, and
// that the two agree on an empty effect (kube's device controller does not: it counts only
// NoExecute tolerations).
func TestDeviceRulesDifferFromNodeRules(t *testing.T) {
	taints := []v1.Taint{noExecAt("a", t0)}
	t.Run("order", func(t *testing.T) {
		tols := []v1.Toleration{exists("a", secs(60)), exists("a", nil)}
		node := tolerations.Deadline(taints, tols, t0, time.Time{}, tolerations.Options{})
		dev := tolerations.Deadline(taints, tols, t0, time.Time{}, deviceRules)
		assert.Equal(t, tolerations.EvictAt, node.Verdict, "NodeRules: got %v, want EvictAt (the first toleration decides)", node.Verdict)
		assert.Equal(t, tolerations.Stay, dev.Verdict, "DeviceRules: got %v, want Stay (forever wins)", dev.Verdict)
	})
	t.Run("empty effect, no difference", func(t *testing.T) {
		tols := []v1.Toleration{{Key: "a", Operator: v1.TolerationOpExists}}
		node := tolerations.Deadline(taints, tols, t0, time.Time{}, tolerations.Options{})
		dev := tolerations.Deadline(taints, tols, t0, time.Time{}, deviceRules)
		assert.Equal(t, tolerations.Stay, node.Verdict, "NodeRules: got %v, want Stay (an empty effect tolerates)", node.Verdict)
		assert.Equal(t, tolerations.Stay, dev.Verdict, "DeviceRules: got %v, want Stay (an empty effect tolerates)", dev.Verdict)
	})
}

func TestMatchDeviceRules(t *testing.T) {
	ne := v1.TaintEffectNoExecute
	tests := []struct {
		name   string
		taints []v1.Taint
		tols   []v1.Toleration
		wantOK bool
		want   []int // indexes into tols
	}{
		{name: "no taints", wantOK: true, want: []int{}},
		{name: "untolerated", taints: []v1.Taint{noExec("a")}, tols: []v1.Toleration{{Key: "a", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}, wantOK: false},
		{name: "empty effect counts", taints: []v1.Taint{noExec("a")}, tols: []v1.Toleration{exists("a", secs(5)), {Key: "a", Operator: v1.TolerationOpExists}}, wantOK: true, want: []int{1}},
		{name: "forever over finite", taints: []v1.Taint{noExec("a")}, tols: []v1.Toleration{exists("a", secs(5)), exists("a", nil)}, wantOK: true, want: []int{1}},
		{name: "shortest", taints: []v1.Taint{noExec("a")}, tols: []v1.Toleration{exists("a", secs(50)), exists("", secs(5)), exists("a", secs(7))}, wantOK: true, want: []int{1}},
		{
			name:   "per taint, NoSchedule skipped",
			taints: []v1.Taint{noExec("a"), {Key: "a", Effect: v1.TaintEffectNoSchedule}, noExec("b")},
			tols:   []v1.Toleration{exists("a", secs(50)), {Key: "b", Operator: v1.TolerationOpExists, Effect: ne, TolerationSeconds: secs(-3)}, exists("b", secs(1))},
			wantOK: true, want: []int{0, 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			used, ok := tolerations.Match(tc.taints, tc.tols, deviceRules)
			require.Equal(t, tc.wantOK, ok, "got ok %v, want %v", ok, tc.wantOK)
			if !ok {
				assert.Nil(t, used, "got %+v with ok false, want nil", used)
				return
			}
			want := []v1.Toleration{}
			for _, j := range tc.want {
				want = append(want, tc.tols[j])
			}
			assert.Equal(t, want, used, "got %+v, want %+v", used, want)
		})
	}
}

func TestObservedDeadlineDeviceRules(t *testing.T) {
	now := t0
	old := now.Add(-24 * time.Hour) // never read
	tests := []evictionCase{
		{name: "no taints", now: now, ref: now.Add(-time.Hour), verdict: tolerations.Stay, wantTnt: -1, wantTol: -1},
		{name: "forever wins", taints: []v1.Taint{noExecAt("a", old)}, tols: []v1.Toleration{exists("a", secs(1)), exists("a", nil)}, now: now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1},
		{
			name:   "shortest from since",
			taints: []v1.Taint{noExecAt("a", old)}, tols: []v1.Toleration{exists("a", secs(600)), exists("a", secs(300))},
			now: now, ref: now.Add(-100 * time.Second), verdict: tolerations.EvictAt, at: now.Add(200 * time.Second), wantTnt: 0, wantTol: 1,
		},
		{
			name:   "empty effect counts",
			taints: []v1.Taint{noExecAt("a", old)}, tols: []v1.Toleration{{Key: "a", Operator: v1.TolerationOpExists, TolerationSeconds: secs(300)}},
			now: now, ref: now.Add(-100 * time.Second), verdict: tolerations.EvictAt, at: now.Add(200 * time.Second), wantTnt: 0, wantTol: 0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tolerations.ObservedDeadline(tc.taints, tc.tols, tc.ref, tc.now, deviceRules)
			checkEviction(t, tc, got)
		})
	}
}

// genDeviceTaint and genDeviceToleration draw from the small device alphabets, with
// TimeAdded and seconds around t0.
func genDeviceTaint(r *rand.Rand) resourcev1.DeviceTaint {
	x := resourcev1.DeviceTaint{Key: devKeys[r.IntN(len(devKeys))], Value: devValues[r.IntN(len(devValues))], Effect: devEffects[r.IntN(len(devEffects))]}
	if r.IntN(3) == 0 {
		x.Effect = resourcev1.DeviceTaintEffectNoExecute // most cases should evict
	}
	switch r.IntN(5) {
	case 0: // nil
	case 1:
		x.TimeAdded = &metav1.Time{}
	default:
		x.TimeAdded = added(t0.Add(time.Duration(r.Int64N(900)-700) * time.Second))
	}
	return x
}

func genDeviceToleration(r *rand.Rand) resourcev1.DeviceToleration {
	t := resourcev1.DeviceToleration{Key: devKeys[r.IntN(len(devKeys))], Operator: devOperators[r.IntN(len(devOperators))], Value: devValues[r.IntN(len(devValues))], Effect: devEffects[r.IntN(len(devEffects))]}
	if r.IntN(2) == 0 {
		t.Effect = resourcev1.DeviceTaintEffectNoExecute
	}
	if r.IntN(3) == 0 {
		t.Operator, t.Value = resourcev1.DeviceTolerationOpExists, "" // enough matches to exercise the times
	}
	if r.IntN(6) > 0 { // nil (forever) one time in six
		t.TolerationSeconds = secs(devSeconds[r.IntN(len(devSeconds))])
	}
	return t
}

// TestDeviceRulesDifferential checks Deadline under DeviceRules, on the conversions of
// random device taints and tolerations, against the reference.
func TestDeviceRulesDifferential(t *testing.T) {
	n := 30_000
	if testing.Short() {
		n = 3_000
	}
	r := rand.New(rand.NewPCG(7, 8))
	counts := map[tolerations.Verdict]int{}
	for i := 0; i < n; i++ {
		dt := make([]resourcev1.DeviceTaint, 1+r.IntN(3))
		for j := range dt {
			dt[j] = genDeviceTaint(r)
		}
		dtol := make([]resourcev1.DeviceToleration, r.IntN(7))
		for j := range dtol {
			dtol[j] = genDeviceToleration(r)
		}
		now, fallback := t0, t0.Add(time.Duration(r.Int64N(1200)-600)*time.Second)
		checkDeviceDeadline(t, dt, dtol, now, fallback)
		counts[tolerations.Deadline(tolerations.DeviceTaints(dt), tolerations.DeviceTolerations(dtol), now, fallback, deviceRules).Verdict]++
	}
	t.Logf("verdicts: %v", counts)
	for _, v := range []tolerations.Verdict{tolerations.Stay, tolerations.EvictNow, tolerations.EvictAt} {
		assert.Greater(t, counts[v], n/20, "got %d cases of %v, want more than %d", counts[v], v, n/20)
	}
}

// checkDeviceDeadline checks Deadline under DeviceRules on the conversions of the device
// objects, with both ComparisonOperators values, against the reference on their raw casts.
func checkDeviceDeadline(t *testing.T, dt []resourcev1.DeviceTaint, dtol []resourcev1.DeviceToleration, now, fallback time.Time) {
	t.Helper()
	taints, tols := tolerations.DeviceTaints(dt), tolerations.DeviceTolerations(dtol)
	rawTaints, rawTols := castTaints(dt), castTolerations(dtol)
	want := bruteDeviceDeadline(rawTaints, rawTols, now, fallback)
	for _, cmp := range []bool{false, true} {
		got := tolerations.Deadline(taints, tols, now, fallback, tolerations.Options{ComparisonOperators: cmp, Rules: tolerations.DeviceRules})
		if got.Verdict != want.Verdict || !got.At.Equal(want.At) ||
			index(taints, got.Taint) != index(rawTaints, want.Taint) || index(tols, got.Toleration) != index(rawTols, want.Toleration) {
			t.Fatalf("cmp %v: Deadline got %v at %v (taint %d, toleration %d), want %v at %v (taint %d, toleration %d)\ntaints %+v\ntolerations %+v",
				cmp, got.Verdict, got.At, index(taints, got.Taint), index(tols, got.Toleration),
				want.Verdict, want.At, index(rawTaints, want.Taint), index(rawTols, want.Toleration), dt, dtol)
		}
	}
}
