package tolerations_test

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// Pools the random generator draws from: small, so that keys, values and effects collide
// often, and full of the edge cases of kube's matching.
var (
	genKeys = []string{"", "", "a", "b", "node.kubernetes.io/unreachable"}

	genEffects = []v1.TaintEffect{"", v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute, v1.TaintEffectNoExecute, "NoScheduleNoAdmit"}

	genOperators = []v1.TolerationOperator{"", v1.TolerationOpEqual, v1.TolerationOpExists, v1.TolerationOpLt, v1.TolerationOpGt, "In", "exists"}

	genValues = []string{
		"", "0", "1", "-1", "2", "10", "-10", "42", "007", "00", "-05", "+1", "+0", "-0", "-",
		"9223372036854775807", "-9223372036854775808", "9223372036854775806",
		"9223372036854775808", "-9223372036854775809", "99999999999999999999999",
		"abc", "true", "1.5", "1e3", "0x10", " 1", "1 ", "1_000", "\u0661",
	}
)

// genValue returns a value from the pool or a random integer in canonical form.
func genValue(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return strconv.FormatInt(r.Int64N(21)-10, 10)
	case 1:
		return strconv.FormatInt(int64(r.Uint64()), 10)
	}
	return genValues[r.IntN(len(genValues))]
}

func genTaint(r *rand.Rand) v1.Taint {
	taint := v1.Taint{
		Key:    genKeys[r.IntN(len(genKeys))],
		Value:  genValue(r),
		Effect: genEffects[r.IntN(len(genEffects))],
	}
	switch r.IntN(4) {
	case 0:
		taint.TimeAdded = added(t0.Add(time.Duration(r.Int64N(2000)-1500) * time.Second))
	case 1:
		taint.TimeAdded = added(time.Time{})
	}
	return taint
}

var genSeconds = []int64{0, -1, 1, 30, 60, 300, 3600, math.MaxInt64, math.MinInt64}

func genToleration(r *rand.Rand) v1.Toleration {
	tol := v1.Toleration{
		Key:      genKeys[r.IntN(len(genKeys))],
		Operator: genOperators[r.IntN(len(genOperators))],
		Value:    genValue(r),
		Effect:   genEffects[r.IntN(len(genEffects))],
	}
	if tol.Operator == v1.TolerationOpExists && r.IntN(2) == 0 {
		tol.Value = ""
	}
	if r.IntN(3) > 0 {
		tol.TolerationSeconds = secs(genSeconds[r.IntN(len(genSeconds))])
	}
	return tol
}

// TestToleratesDifferential checks Tolerates against k8s.io/api's ToleratesTaint on random
// pairs, with the comparison operators off and on.
func TestToleratesDifferential(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	r := rand.New(rand.NewPCG(1, 2))
	agreeTrue, agreeFalse := 0, 0
	for i := 0; i < n; i++ {
		tol, taint := genToleration(r), genTaint(r)
		for _, cmp := range []bool{false, true} {
			opts := tolerations.Options{ComparisonOperators: cmp}
			got := tolerations.Tolerates(&tol, &taint, opts)
			want := tol.ToleratesTaint(discard, &taint, cmp)
			if got != want {
				t.Fatalf("pair %d, ComparisonOperators %v: Tolerates(%+v, %+v) got %v, want %v (k8s.io/api)", i, cmp, tol, taint, got, want)
			}
			if got {
				agreeTrue++
			} else {
				agreeFalse++
			}
		}
	}
	// The generator must exercise both outcomes heavily, or the comparison proves little.
	assert.Greater(t, agreeTrue, n/20, "got %d matching pairs, want more than %d", agreeTrue, n/20)
	assert.Greater(t, agreeFalse, n/20, "got %d non-matching pairs, want more than %d", agreeFalse, n/20)
}

// TestToleratesDifferentialNumeric focuses on Lt and Gt with numeric-looking values, where
// parsing differences would hide in the broad test above.
func TestToleratesDifferentialNumeric(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	matched := 0
	for i := 0; i < 50_000; i++ {
		op := v1.TolerationOpLt
		if r.IntN(2) == 0 {
			op = v1.TolerationOpGt
		}
		tol := v1.Toleration{Key: "n", Operator: op, Value: genValue(r)}
		taint := v1.Taint{Key: "n", Value: genValue(r), Effect: v1.TaintEffectNoExecute}
		got := tolerations.Tolerates(&tol, &taint, tolerations.Options{ComparisonOperators: true})
		want := tol.ToleratesTaint(discard, &taint, true)
		require.Equal(t, want, got, "Tolerates(%q %s %q) got %v, want %v", taint.Value, op, tol.Value, got, want)
		if got {
			matched++
		}
	}
	assert.Greater(t, matched, 5_000, "got %d matches, want the generator to produce many", matched)
}

// TestMatchDifferential checks Match against a naive copy of kube's GetMatchingTolerations
// on random taint and toleration lists.
func TestMatchDifferential(t *testing.T) {
	n := 30_000
	if testing.Short() {
		n = 3_000
	}
	r := rand.New(rand.NewPCG(5, 6))
	oks, fails := 0, 0
	for i := 0; i < n; i++ {
		taints := make([]v1.Taint, r.IntN(5))
		for j := range taints {
			taints[j] = genTaint(r)
		}
		tols := make([]v1.Toleration, r.IntN(7))
		for j := range tols {
			tols[j] = genToleration(r)
		}
		if r.IntN(10) == 0 {
			// Often enough, a tolerate-everything toleration somewhere in the list.
			tols = append(tols, v1.Toleration{Operator: v1.TolerationOpExists})
			r.Shuffle(len(tols), func(a, b int) { tols[a], tols[b] = tols[b], tols[a] })
		}
		for _, cmp := range []bool{false, true} {
			opts := tolerations.Options{ComparisonOperators: cmp}
			got, ok := tolerations.Match(taints, tols, opts)
			wantOK, want := kubeMatchingTolerations(taints, tols, opts)
			require.Equal(t, wantOK, ok, "case %d (cmp %v): got ok %v, want %v\ntaints %+v\ntolerations %+v", i, cmp, ok, wantOK, taints, tols)
			if ok {
				require.Equal(t, want, got, "case %d (cmp %v): got %+v, want %+v", i, cmp, got, want)
				oks++
			} else {
				require.Nil(t, got, "case %d: got %+v with ok false, want nil", i, got)
				fails++
			}

			// Deadline and ObservedDeadline agree with their references on the same lists.
			now, ref := t0, t0.Add(time.Duration(r.Int64N(1200)-600)*time.Second)
			gotD := tolerations.Deadline(taints, tols, now, ref, opts)
			wantD := bruteDeadline(taints, tols, now, ref, opts)
			require.Equal(t, wantD, gotD, "case %d: Deadline got %+v, want %+v", i, gotD, wantD)
			gotO := tolerations.ObservedDeadline(taints, tols, ref, now, opts)
			wantV, wantAt := kubeObserved(taints, tols, ref, now, opts)
			require.Equal(t, wantV, gotO.Verdict, "case %d: ObservedDeadline got %v, want %v", i, gotO.Verdict, wantV)
			require.True(t, wantAt.Equal(gotO.At), "case %d: ObservedDeadline got %v, want %v", i, gotO.At, wantAt)
		}
	}
	assert.Greater(t, oks, n/10, "got %d tolerated lists, want more than %d", oks, n/10)
	assert.Greater(t, fails, n/10, "got %d untolerated lists, want more than %d", fails, n/10)
}
