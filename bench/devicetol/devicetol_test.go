package devicetol

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"

	"github.com/taintevict/taintevict/tolerations"
)

// Small alphabets, so that keys, values and effects collide often, holding every edge of
// the matching: empty strings, None and unknown effects, unknown operators, Lt and Gt (node
// operators that devices do not have), nil, zero, negative and huge seconds.
var (
	keys      = []string{"", "", "a", "b", "gpu.example.com/unhealthy"}
	values    = []string{"", "1", "5", "x", "-1"}
	effects   = []resourcev1.DeviceTaintEffect{"", "NoExecute", "NoExecute", "NoSchedule", "None", "PreferNoSchedule", "Evict"}
	operators = []resourcev1.DeviceTolerationOperator{"", "Equal", "Exists", "Exists", "Lt", "Gt", "In", "exists", "equal"}
	seconds   = []int64{0, -1, 1, 30, 60, 300, 3600, 86400, math.MaxInt64, math.MinInt64}
)

// t0 is the fixed "now": tests never read the clock.
var t0 = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)

// allOptions is every combination of the tolerations.Options fields.
var allOptions = []tolerations.Options{
	{},
	{ComparisonOperators: true},
	{Rules: tolerations.DeviceRules},
	{ComparisonOperators: true, Rules: tolerations.DeviceRules},
}

func pick[T any](r *rand.Rand, pool []T) T { return pool[r.IntN(len(pool))] }

// genToleration draws a toleration; half of the time it is aimed at one of targets (its key
// or "", its value, its effect or NoExecute or ""), so that enough of them match.
func genToleration(r *rand.Rand, targets []resourcev1.DeviceTaint) resourcev1.DeviceToleration {
	tol := resourcev1.DeviceToleration{Key: pick(r, keys), Operator: pick(r, operators), Value: pick(r, values), Effect: pick(r, effects)}
	if len(targets) > 0 && r.IntN(2) == 0 {
		x := pick(r, targets)
		tol.Key, tol.Value = pick(r, []string{x.Key, x.Key, ""}), x.Value
		tol.Effect = pick(r, []resourcev1.DeviceTaintEffect{x.Effect, resourcev1.DeviceTaintEffectNoExecute, ""})
	}
	if r.IntN(5) > 0 {
		tol.TolerationSeconds = ptr(pick(r, seconds))
	}
	return tol
}

// genTaint draws a taint, NoExecute more often than the alphabet alone would, added between
// 700 s before t0 and 200 s after it (clock skew), or with no TimeAdded one time in eight.
func genTaint(r *rand.Rand) resourcev1.DeviceTaint {
	taint := resourcev1.DeviceTaint{Key: pick(r, keys), Value: pick(r, values), Effect: pick(r, effects)}
	if r.IntN(3) == 0 {
		taint.Effect = resourcev1.DeviceTaintEffectNoExecute // more taints that evict
	}
	if r.IntN(8) > 0 {
		taint.TimeAdded = &metav1.Time{Time: t0.Add(time.Duration(r.Int64N(900)-700) * time.Second)}
	}
	return taint
}

func ptr[T any](v T) *T { return &v }

// checkPair asserts, for one toleration and taint, that ToleratesDevice and Tolerates on the
// conversions (under every Options) agree with kube's resourceclaim.ToleratesTaint, and
// returns kube's answer.
func checkPair(t *testing.T, tol resourcev1.DeviceToleration, taint resourcev1.DeviceTaint) bool {
	t.Helper()
	want := resourceclaim.ToleratesTaint(tol, taint)
	if got := tolerations.ToleratesDevice(&tol, &taint); got != want {
		t.Fatalf("ToleratesDevice(%+v, %+v): got %v, want %v (resourceclaim.ToleratesTaint)", tol, taint, got, want)
	}
	ctol := tolerations.DeviceTolerations([]resourcev1.DeviceToleration{tol})
	ctaint := tolerations.DeviceTaints([]resourcev1.DeviceTaint{taint})
	for _, opts := range allOptions {
		if got := tolerations.Tolerates(&ctol[0], &ctaint[0], opts); got != want {
			t.Fatalf("Tolerates on the conversions of %+v and %+v, %+v: got %v, want %v (resourceclaim.ToleratesTaint)", tol, taint, opts, got, want)
		}
	}
	return want
}

// TestToleratesDifferential checks device matching against kube's on random pairs.
func TestToleratesDifferential(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	r := rand.New(rand.NewPCG(17, 4))
	tolerated := 0
	for i := 0; i < n; i++ {
		taint := genTaint(r)
		if checkPair(t, genToleration(r, []resourcev1.DeviceTaint{taint}), taint) {
			tolerated++
		}
	}
	// Both outcomes must be frequent, or agreeing proves little.
	if tolerated < n/10 || tolerated > n-n/10 {
		t.Fatalf("got %d tolerated pairs of %d, want between %d and %d", tolerated, n, n/10, n-n/10)
	}
}

// FuzzTolerates checks device matching against kube's on arbitrary strings.
func FuzzTolerates(f *testing.F) {
	for _, s := range [][7]string{
		// toleration key, operator, value, effect; taint key, value, effect
		{"a", "Equal", "v", "NoExecute", "a", "v", "NoExecute"},
		{"a", "", "v", "", "a", "v", "NoSchedule"},
		{"a", "", "v", "", "a", "w", "NoSchedule"},
		{"", "Exists", "", "", "gpu.example.com/unhealthy", "", "NoExecute"},
		{"", "Equal", "v", "NoExecute", "any", "v", "NoExecute"},
		{"a", "Exists", "", "NoSchedule", "a", "", "NoExecute"},
		{"a", "Exists", "", "None", "a", "", "None"},
		{"a", "Exists", "", "", "a", "", "SomeFutureEffect"},
		{"n", "Lt", "10", "", "n", "5", "NoExecute"},
		{"n", "Gt", "-10", "", "n", "-5", "NoExecute"},
		{"a", "In", "v", "", "a", "v", "NoExecute"},
		{"a", "exists", "", "", "a", "", "NoExecute"},
		{"a", "device:Exists", "", "", "a", "", "NoExecute"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6])
	}
	f.Fuzz(func(t *testing.T, tolKey, op, tolValue, tolEffect, taintKey, taintValue, taintEffect string) {
		checkPair(t,
			resourcev1.DeviceToleration{Key: tolKey, Operator: resourcev1.DeviceTolerationOperator(op), Value: tolValue, Effect: resourcev1.DeviceTaintEffect(tolEffect)},
			resourcev1.DeviceTaint{Key: taintKey, Value: taintValue, Effect: resourcev1.DeviceTaintEffect(taintEffect)})
	})
}

// latestUnix is the last Unix second a time.Time holds (its seconds count from year 1, which
// is 62135596800 seconds before 1970): where tolerations.Deadline's sums stop. Kube's
// claimEvictionTime multiplies seconds by time.Second without a check and overflows far
// earlier, past 292 years.
const latestUnix = math.MaxInt64 - 62135596800 - 1

// plusSeconds is added plus s >= 0 seconds, exactly, up to the latest time a time.Time
// holds.
func plusSeconds(added time.Time, s int64) time.Time {
	if s <= math.MaxInt64/int64(time.Second) {
		return added.Add(time.Duration(s) * time.Second)
	}
	sum := new(big.Int).Add(big.NewInt(added.Unix()), big.NewInt(s))
	if sum.Cmp(big.NewInt(latestUnix)) > 0 {
		sum.SetInt64(latestUnix)
	}
	return time.Unix(sum.Int64(), int64(added.Nanosecond())).In(added.Location())
}

// kubeDeviceTime is kube's claimEvictionTime (pkg/controller/devicetainteviction, v1.37.2)
// for one allocated device, written from its rule with kube's exported matching:
//
//   - only NoExecute taints count;
//   - for each, only tolerations whose effect is exactly NoExecute and that
//     resourceclaim.ToleratesTaint count (tolerations counts an empty effect too: see
//     below); one with nil seconds ignores the taint;
//   - otherwise the taint's time is TimeAdded plus the smallest max(seconds, 0), or TimeAdded
//     alone with no such toleration;
//   - the device's time is the smallest over its taints; none (forever) is reported as ok
//     false.
//
// Where tolerations documents a difference it is applied here, marked as such: a
// toleration with an empty effect counts (the API says an empty effect matches every
// effect, and the allocator reads it so), a nil or
// zero TimeAdded counts from fallback (kube's API server always sets it), a TimeAdded later
// than now counts as now, and seconds too large for a time.Duration count in full (up to
// the latest time a time.Time holds).
func kubeDeviceTime(taints []resourcev1.DeviceTaint, tols []resourcev1.DeviceToleration, now, fallback time.Time) (when time.Time, ok bool) {
nextTaint:
	for _, taint := range taints {
		if taint.Effect != resourcev1.DeviceTaintEffectNoExecute {
			continue
		}
		have := false
		shortest := int64(math.MaxInt64)
		for _, tol := range tols {
			counts := tol.Effect == resourcev1.DeviceTaintEffectNoExecute ||
				tol.Effect == "" // difference: kube counts only NoExecute
			if !counts || !resourceclaim.ToleratesTaint(tol, taint) {
				continue
			}
			if tol.TolerationSeconds == nil {
				continue nextTaint // tolerated forever
			}
			shortest = min(shortest, max(*tol.TolerationSeconds, 0))
			have = true
		}
		added := fallback // difference: kube has TimeAdded always
		if taint.TimeAdded != nil && !taint.TimeAdded.IsZero() {
			added = taint.TimeAdded.Time
		}
		if added.IsZero() || added.After(now) { // difference: kube waits for a future TimeAdded
			added = now
		}
		t := added
		if have {
			t = plusSeconds(added, shortest) // difference: exact where kube overflows
		}
		if !ok || t.Before(when) {
			when, ok = t, true
		}
	}
	return when, ok
}

// checkDeadline asserts that tolerations.Deadline under DeviceRules, on the conversions,
// gives kube's device time, and returns its verdict.
func checkDeadline(t *testing.T, taints []resourcev1.DeviceTaint, tols []resourcev1.DeviceToleration, now, fallback time.Time) tolerations.Verdict {
	t.Helper()
	when, evicts := kubeDeviceTime(taints, tols, now, fallback)
	wantVerdict, wantAt := tolerations.Stay, time.Time{}
	switch {
	case evicts && when.After(now):
		wantVerdict, wantAt = tolerations.EvictAt, when
	case evicts:
		wantVerdict, wantAt = tolerations.EvictNow, now
	}
	ct, ctol := tolerations.DeviceTaints(taints), tolerations.DeviceTolerations(tols)
	for _, cmp := range []bool{false, true} {
		got := tolerations.Deadline(ct, ctol, now, fallback, tolerations.Options{ComparisonOperators: cmp, Rules: tolerations.DeviceRules})
		if got.Verdict != wantVerdict || !got.At.Equal(wantAt) {
			t.Fatalf("ComparisonOperators %v: got %v at %v, want %v at %v (kube's device rule)\ntaints %+v\ntolerations %+v",
				cmp, got.Verdict, got.At, wantVerdict, wantAt, taints, tols)
		}
		if got.Verdict == tolerations.EvictAt {
			// The deciding toleration tolerates the deciding taint by kube's matching, and
			// counts for eviction (its effect is NoExecute or empty).
			i, j := indexOf(ct, got.Taint), indexOf(ctol, got.Toleration)
			if i < 0 || j < 0 || tols[j].Effect != resourcev1.DeviceTaintEffectNoExecute && tols[j].Effect != "" || !resourceclaim.ToleratesTaint(tols[j], taints[i]) {
				t.Fatalf("got deciding taint %d and toleration %d, want a NoExecute or empty-effect toleration that tolerates the taint\ntaints %+v\ntolerations %+v", i, j, taints, tols)
			}
		}
	}
	return wantVerdict
}

func indexOf[T any](s []T, p *T) int {
	for i := range s {
		if &s[i] == p {
			return i
		}
	}
	return -1
}

// TestDeadlineDifferential checks the device deadline against kube's rule on random
// devices: up to 3 taints and 7 tolerations each.
func TestDeadlineDifferential(t *testing.T) {
	n := 50_000
	if testing.Short() {
		n = 5_000
	}
	r := rand.New(rand.NewPCG(17, 5))
	counts := map[tolerations.Verdict]int{}
	for i := 0; i < n; i++ {
		taints := make([]resourcev1.DeviceTaint, 1+r.IntN(3))
		for j := range taints {
			taints[j] = genTaint(r)
		}
		tols := make([]resourcev1.DeviceToleration, r.IntN(8))
		for j := range tols {
			tols[j] = genToleration(r, taints)
		}
		fallback := t0.Add(time.Duration(r.Int64N(1200)-900) * time.Second)
		if r.IntN(10) == 0 {
			fallback = time.Time{}
		}
		counts[checkDeadline(t, taints, tols, t0, fallback)]++
	}
	t.Logf("verdicts: %v", counts)
	for _, v := range []tolerations.Verdict{tolerations.Stay, tolerations.EvictNow, tolerations.EvictAt} {
		if counts[v] < n/20 {
			t.Fatalf("got %d cases of %v of %d, want at least %d: the generator must reach every verdict", counts[v], v, n, n/20)
		}
	}
}

// FuzzDeadline checks the device deadline against kube's rule on devices decoded from
// bytes: per taint 4 bytes (key, value, effect, TimeAdded), then per toleration 5 bytes
// (key, operator, value, effect, seconds), drawing from the alphabets above.
func FuzzDeadline(f *testing.F) {
	const (
		kA, kGPU                 = 2, 4 // keys
		vNone, vOne              = 0, 1 // values
		eNone, eNoExec, eNoSched = 0, 1, 3
		oEqual, oExists, oLt     = 1, 2, 4
		sNil, s60, s300, sNeg    = 0, 5, 6, 2 // seconds: 0 is nil, n is seconds[n-1]
		aNil, aNow, aPast        = 0, 1, 2    // TimeAdded: nil, now, 100 s ago; more: in the future
	)
	for _, seed := range [][]byte{
		{},
		{1, kGPU, vNone, eNoExec, aPast, 0}, // untolerated
		{1, kGPU, vNone, eNoExec, aPast, 1, kGPU, oExists, vNone, eNoExec, s300},                               // tolerated 300 s
		{1, kGPU, vNone, eNoExec, aPast, 1, kGPU, oExists, vNone, eNone, sNil},                                 // empty effect: counts (kube: does not)
		{1, kGPU, vNone, eNoSched, aPast, 0},                                                                   // NoSchedule: ignored
		{1, kGPU, vNone, eNoExec, aNil, 1, kGPU, oExists, vNone, eNoExec, s60},                                 // fallback
		{1, kGPU, vNone, eNoExec, 3, 1, kGPU, oExists, vNone, eNoExec, s60},                                    // TimeAdded in the future
		{1, kA, vOne, eNoExec, aNow, 1, kA, oLt, 2, eNoExec, s60},                                              // Lt never matches
		{1, kA, vOne, eNoExec, aNow, 1, kA, oEqual, vOne, eNoExec, sNeg},                                       // negative seconds
		{1, kA, vNone, eNoExec, aNow, 2, kA, oExists, vNone, eNoExec, s300, kA, oExists, vNone, eNoExec, sNil}, // forever wins
		{2, kA, vNone, eNoExec, aNow, kGPU, vNone, eNoExec, aPast,
			3, kA, oExists, vNone, eNoExec, s300, 0, oExists, vNone, eNoExec, s60, kGPU, oExists, vNone, eNoExec, s300}, // min over several, over taints
	} {
		f.Add(seed, int64(-60))
	}
	f.Fuzz(func(t *testing.T, data []byte, fallbackOffset int64) {
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return int(b)
		}
		taints := make([]resourcev1.DeviceTaint, next()%6)
		for i := range taints {
			taints[i] = resourcev1.DeviceTaint{Key: keys[next()%len(keys)], Value: values[next()%len(values)], Effect: effects[next()%len(effects)]}
			switch a := next(); a {
			case aNil:
			case aNow:
				taints[i].TimeAdded = &metav1.Time{Time: t0}
			case aPast:
				taints[i].TimeAdded = &metav1.Time{Time: t0.Add(-100 * time.Second)}
			default:
				taints[i].TimeAdded = &metav1.Time{Time: t0.Add(time.Duration(a-100) * 10 * time.Second)}
			}
		}
		tols := make([]resourcev1.DeviceToleration, next()%8)
		for i := range tols {
			tols[i] = resourcev1.DeviceToleration{Key: keys[next()%len(keys)], Operator: operators[next()%len(operators)], Value: values[next()%len(values)], Effect: effects[next()%len(effects)]}
			if s := next() % (len(seconds) + 1); s > 0 {
				tols[i].TolerationSeconds = ptr(seconds[s-1])
			}
		}
		fallback := t0.Add(time.Duration(fallbackOffset%(1<<40)) * time.Second)
		checkDeadline(t, taints, tols, t0, fallback)
	})
}
