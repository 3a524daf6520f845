package tolerations_test

import (
	"encoding/binary"
	"math"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// FuzzTolerates compares Tolerates with k8s.io/api's ToleratesTaint on arbitrary strings.
func FuzzTolerates(f *testing.F) {
	type seed struct {
		tolKey, op, tolValue, tolEffect, taintKey, taintValue, taintEffect string
		cmp                                                                bool
	}
	for _, s := range []seed{
		{"k", "Equal", "v", "NoExecute", "k", "v", "NoExecute", false},
		{"k", "", "v", "", "k", "v", "NoSchedule", false},
		{"", "Exists", "", "", "node.kubernetes.io/unreachable", "", "NoExecute", false},
		{"", "Equal", "v", "NoExecute", "any", "v", "NoExecute", false},
		{"k", "Exists", "", "NoSchedule", "k", "", "NoExecute", false},
		{"k", "In", "v", "", "k", "v", "NoExecute", true},
		{"n", "Lt", "10", "", "n", "5", "NoExecute", true},
		{"n", "Lt", "10", "", "n", "5", "NoExecute", false},
		{"n", "Gt", "-10", "", "n", "-5", "NoExecute", true},
		{"n", "Gt", "0", "", "n", "9223372036854775808", "NoExecute", true},
		{"n", "Lt", "0", "", "n", "-9223372036854775808", "NoExecute", true},
		{"n", "Gt", "-9223372036854775808", "", "n", "0", "NoExecute", true},
		{"n", "Lt", "010", "", "n", "5", "NoExecute", true},
		{"n", "Gt", "0", "", "n", "+1", "NoExecute", true},
		{"n", "Lt", "10", "", "n", "-0", "NoExecute", true},
		{"n", "Lt", "10", "", "n", "-", "NoExecute", true},
		{"n", "Lt", "10", "", "n", "", "NoExecute", true},
		{"n", "Lt", "10", "", "n", "1.5", "NoExecute", true},
		{"n", "Lt", "10", "", "n", "\u0665", "NoExecute", true},
	} {
		f.Add(s.tolKey, s.op, s.tolValue, s.tolEffect, s.taintKey, s.taintValue, s.taintEffect, s.cmp)
	}
	f.Fuzz(func(t *testing.T, tolKey, op, tolValue, tolEffect, taintKey, taintValue, taintEffect string, cmp bool) {
		tol := v1.Toleration{Key: tolKey, Operator: v1.TolerationOperator(op), Value: tolValue, Effect: v1.TaintEffect(tolEffect)}
		taint := v1.Taint{Key: taintKey, Value: taintValue, Effect: v1.TaintEffect(taintEffect)}
		got := tolerations.Tolerates(&tol, &taint, tolerations.Options{ComparisonOperators: cmp})
		want := tol.ToleratesTaint(discard, &taint, cmp)
		if got != want {
			t.Fatalf("Tolerates(%+v, %+v, cmp %v): got %v, want %v (k8s.io/api)", tol, taint, cmp, got, want)
		}
	})
}

// FuzzDeviceTolerates checks, on arbitrary strings, that ToleratesDevice agrees with the
// reference for device matching, and that Tolerates on the conversions agrees with
// ToleratesDevice under every Options.
func FuzzDeviceTolerates(f *testing.F) {
	for _, s := range [][7]string{
		{"k", "Equal", "v", "NoExecute", "k", "v", "NoExecute"},
		{"k", "", "v", "", "k", "v", "NoSchedule"},
		{"", "Exists", "", "", "gpu.example.com/unhealthy", "", "NoExecute"},
		{"", "Equal", "v", "NoExecute", "any", "v", "NoExecute"},
		{"k", "Exists", "", "NoSchedule", "k", "", "NoExecute"},
		{"k", "Exists", "", "None", "k", "", "None"},
		{"k", "Exists", "", "", "k", "", "SomeFutureEffect"},
		{"n", "Lt", "10", "", "n", "5", "NoExecute"},
		{"n", "Gt", "-10", "", "n", "-5", "NoExecute"},
		{"k", "In", "v", "", "k", "v", "NoExecute"},
		{"k", "exists", "", "", "k", "", "NoExecute"},
		{"k", "device:Exists", "", "", "k", "", "NoExecute"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6])
	}
	f.Fuzz(func(t *testing.T, tolKey, op, tolValue, tolEffect, taintKey, taintValue, taintEffect string) {
		tol := resourcev1.DeviceToleration{Key: tolKey, Operator: resourcev1.DeviceTolerationOperator(op), Value: tolValue, Effect: resourcev1.DeviceTaintEffect(tolEffect)}
		taint := resourcev1.DeviceTaint{Key: taintKey, Value: taintValue, Effect: resourcev1.DeviceTaintEffect(taintEffect)}
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
	})
}

// asDevice casts a scenario's node taints and tolerations to device ones, strings as they
// are.
func asDevice(taints []v1.Taint, tols []v1.Toleration) ([]resourcev1.DeviceTaint, []resourcev1.DeviceToleration) {
	dt := make([]resourcev1.DeviceTaint, len(taints))
	for i, x := range taints {
		dt[i] = resourcev1.DeviceTaint{Key: x.Key, Value: x.Value, Effect: resourcev1.DeviceTaintEffect(x.Effect), TimeAdded: x.TimeAdded}
	}
	dtol := make([]resourcev1.DeviceToleration, len(tols))
	for i, t := range tols {
		dtol[i] = resourcev1.DeviceToleration{Key: t.Key, Operator: resourcev1.DeviceTolerationOperator(t.Operator), Value: t.Value, Effect: resourcev1.DeviceTaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds}
	}
	return dt, dtol
}

// scenarioReader decodes fuzzer bytes into taints and tolerations drawn mostly from the
// generator's pools; exhausted input reads as zeros.
type scenarioReader struct{ data []byte }

func (r *scenarioReader) byte() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *scenarioReader) int16() int16 {
	return int16(uint16(r.byte())<<8 | uint16(r.byte()))
}

func (r *scenarioReader) int64() int64 {
	var b [8]byte
	for i := range b {
		b[i] = r.byte()
	}
	return int64(binary.BigEndian.Uint64(b[:]))
}

func pick[T any](r *scenarioReader, pool []T) T { return pool[int(r.byte())%len(pool)] }

// decodeScenario reads, in order: the number of taints (mod 6); per taint key, value,
// effect and a TimeAdded kind (0 nil, 1 zero, 2 now + int16 seconds, 3 Unix nanoseconds
// from an int64); the number of tolerations (mod 8); per toleration key, operator, value,
// effect and a seconds kind (0 nil, 1 from the pool, 2 int16, 3 int64).
func decodeScenario(data []byte, now time.Time) ([]v1.Taint, []v1.Toleration) {
	r := &scenarioReader{data: data}
	taints := make([]v1.Taint, int(r.byte())%6)
	for i := range taints {
		taints[i] = v1.Taint{Key: pick(r, genKeys), Value: pick(r, genValues), Effect: pick(r, genEffects)}
		switch r.byte() % 4 {
		case 1:
			taints[i].TimeAdded = &metav1.Time{}
		case 2:
			taints[i].TimeAdded = added(now.Add(time.Duration(r.int16()) * time.Second))
		case 3:
			taints[i].TimeAdded = added(time.Unix(0, r.int64()).UTC())
		}
	}
	tols := make([]v1.Toleration, int(r.byte())%8)
	for i := range tols {
		tols[i] = v1.Toleration{Key: pick(r, genKeys), Operator: pick(r, genOperators), Value: pick(r, genValues), Effect: pick(r, genEffects)}
		switch r.byte() % 4 {
		case 1:
			tols[i].TolerationSeconds = secs(pick(r, genSeconds))
		case 2:
			tols[i].TolerationSeconds = secs(int64(r.int16()))
		case 3:
			tols[i].TolerationSeconds = secs(r.int64())
		}
	}
	return taints, tols
}

// Indexes into the generator's pools and kinds of decodeScenario, to write the seeds below.
const (
	kEmpty, kA, kUnreachable    = 0, 2, 4 // genKeys
	vEmpty, vOne, vTen          = 0, 2, 5 // genValues
	eEmpty, eNoSched, eNoExec   = 0, 1, 3 // genEffects
	opExists, opLt              = 2, 3    // genOperators
	tNil, tZero, tRel, tAbs     = 0, 1, 2, 3
	sNil, sPool, sInt16, sInt64 = 0, 1, 2, 3
	pZero, pMinusOne, p60, p300 = 0, 1, 4, 5 // genSeconds
	pMax, pMin                  = 7, 8
)

func FuzzDeadline(f *testing.F) {
	now := t0.Unix()
	for _, seed := range [][]byte{
		{},
		// unreachable taint added 100 s ago, tolerated for 300 s
		{1, kUnreachable, vEmpty, eNoExec, tRel, 0xff, 0x9c, 1, kUnreachable, opExists, vEmpty, eNoExec, sPool, p300},
		// same, TimeAdded nil (fallback) and zero
		{1, kUnreachable, vEmpty, eNoExec, tNil, 1, kUnreachable, opExists, vEmpty, eNoExec, sPool, p300},
		{1, kUnreachable, vEmpty, eNoExec, tZero, 1, kUnreachable, opExists, vEmpty, eNoExec, sPool, p300},
		// tolerated forever; untolerated; NoSchedule only
		{1, kA, vEmpty, eNoExec, tRel, 0, 10, 1, kEmpty, opExists, vEmpty, eEmpty, sNil},
		{1, kA, vEmpty, eNoExec, tRel, 0, 10, 0},
		{2, kA, vEmpty, eNoSched, tNil, kUnreachable, vEmpty, eNoSched, tNil, 0},
		// finite before forever, and the reverse
		{1, kA, vEmpty, eNoExec, tNil, 2, kA, opExists, vEmpty, eNoExec, sPool, p300, kA, opExists, vEmpty, eNoExec, sNil},
		{1, kA, vEmpty, eNoExec, tNil, 2, kA, opExists, vEmpty, eNoExec, sNil, kA, opExists, vEmpty, eNoExec, sPool, p300},
		// zero, negative, max and min seconds
		{1, kA, vEmpty, eNoExec, tNil, 1, kA, opExists, vEmpty, eNoExec, sPool, pZero},
		{1, kA, vEmpty, eNoExec, tNil, 1, kA, opExists, vEmpty, eNoExec, sPool, pMinusOne},
		{1, kA, vEmpty, eNoExec, tNil, 1, kA, opExists, vEmpty, eNoExec, sPool, pMax},
		{1, kA, vEmpty, eNoExec, tNil, 1, kA, opExists, vEmpty, eNoExec, sPool, pMin},
		// TimeAdded far in the past and far in the future, with huge seconds
		{1, kA, vEmpty, eNoExec, tAbs, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, kA, opExists, vEmpty, eNoExec, sInt64, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{1, kA, vEmpty, eNoExec, tAbs, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, kA, opExists, vEmpty, eNoExec, sInt16, 0, 60},
		// DeviceRules: the shortest of two matching NoExecute tolerations, neither first
		{1, kA, vEmpty, eNoExec, tNil, 3, kA, opExists, vEmpty, eNoSched, sNil, kA, opExists, vEmpty, eNoExec, sPool, p300, kEmpty, opExists, vEmpty, eNoExec, sPool, p60},
		// DeviceRules: an empty effect counts, finite after a longer NoExecute one, and forever
		{1, kA, vEmpty, eNoExec, tNil, 2, kA, opExists, vEmpty, eNoExec, sPool, p300, kA, opExists, vEmpty, eEmpty, sPool, p60},
		{1, kA, vEmpty, eNoExec, tNil, 2, kA, opExists, vEmpty, eNoExec, sPool, p60, kEmpty, opExists, vEmpty, eEmpty, sNil},
		// Lt on a numeric taint; several taints with an earliest deadline
		{1, kA, vOne, eNoExec, tNil, 1, kA, opLt, vTen, eNoExec, sPool, p300},
		{3, kA, vEmpty, eNoExec, tRel, 0xff, 0x00, kUnreachable, vEmpty, eNoExec, tRel, 0xff, 0x00, kA, vEmpty, eNoSched, tNil,
			2, kUnreachable, opExists, vEmpty, eNoExec, sPool, p300, kEmpty, opExists, vEmpty, eEmpty, sInt16, 0x02, 0x00},
	} {
		f.Add(seed, now, int64(0), int64(-30*time.Second), false)
		f.Add(seed, now, int64(0), int64(0), true)
	}
	f.Add([]byte{1, kA, vEmpty, eNoExec, tNil, 1, kA, opExists, vEmpty, eNoExec, sPool, pMax}, int64(math.MaxInt64), int64(0), int64(math.MinInt64), false)
	f.Add([]byte{1, kA, vEmpty, eNoExec, tRel, 0x7f, 0xff, 1, kA, opExists, vEmpty, eNoExec, sPool, pMax}, int64(math.MinInt64), int64(-1), int64(math.MaxInt64), true)

	f.Fuzz(func(t *testing.T, data []byte, nowSec, nowNsec, refOffset int64, cmp bool) {
		now := time.Unix(nowSec, nowNsec%int64(time.Second)).UTC()
		ref := now.Add(time.Duration(refOffset)) // fallback for Deadline, since for ObservedDeadline
		if refOffset%7 == 0 {
			ref = time.Time{}
		}
		taints, tols := decodeScenario(data, now)
		opts := tolerations.Options{ComparisonOperators: cmp}

		got := tolerations.Deadline(taints, tols, now, ref, opts)
		checkEvictionInvariants(t, "Deadline", got, taints, tols, now, opts)
		if want := bruteDeadline(taints, tols, now, ref, opts); got != want {
			t.Fatalf("Deadline: got %+v, want brute force %+v\ntaints %+v\ntolerations %+v", got, want, taints, tols)
		}

		// Restart safety: when every countdown has a real start at or before now, asking
		// again later, before the deadline, gives the same answer.
		if got.Verdict == tolerations.EvictAt && startsKnown(taints, ref, now) {
			later := now.Add(got.At.Sub(now) / 2)
			if again := tolerations.Deadline(taints, tols, later, ref, opts); again != got {
				t.Fatalf("Deadline at %v: got %+v, want %+v as at %v", later, again, got, now)
			}
		}

		// DeviceRules on the same lists, and on their device casts through the conversions.
		devOpts := tolerations.Options{ComparisonOperators: cmp, Rules: tolerations.DeviceRules}
		dev := tolerations.Deadline(taints, tols, now, ref, devOpts)
		if want := bruteDeviceDeadline(taints, tols, now, ref); dev != want {
			t.Fatalf("Deadline, DeviceRules: got %+v, want brute force %+v\ntaints %+v\ntolerations %+v", dev, want, taints, tols)
		}
		if dev.Verdict == tolerations.EvictAt && startsKnown(taints, ref, now) {
			later := now.Add(dev.At.Sub(now) / 2)
			if again := tolerations.Deadline(taints, tols, later, ref, devOpts); again != dev {
				t.Fatalf("Deadline, DeviceRules, at %v: got %+v, want %+v as at %v", later, again, dev, now)
			}
		}
		dt, dtol := asDevice(taints, tols)
		checkDeviceDeadline(t, dt, dtol, now, ref)

		used, ok := tolerations.Match(taints, tols, opts)
		wantOK, wantUsed := kubeMatchingTolerations(taints, tols, opts)
		if ok != wantOK || (ok && !reflect.DeepEqual(used, wantUsed)) {
			t.Fatalf("Match: got %+v, %v, want %+v, %v", used, ok, wantUsed, wantOK)
		}

		obs := tolerations.ObservedDeadline(taints, tols, ref, now, opts)
		checkEvictionInvariants(t, "ObservedDeadline", obs, taints, tols, now, opts)
		wantV, wantAt := kubeObserved(taints, tols, ref, now, opts)
		if obs.Verdict != wantV || !obs.At.Equal(wantAt) {
			t.Fatalf("ObservedDeadline: got %v at %v, want %v at %v (since + MinTolerationTime(Match))", obs.Verdict, obs.At, wantV, wantAt)
		}
		if ok && obs.Verdict != tolerations.Stay {
			// The deciding toleration has the smallest tolerationSeconds (<= 0 counting as 0)
			// of the ones Match uses, and its taint is the first with it.
			minTime, _ := tolerations.MinTolerationTime(used)
			if d := clampedSeconds(*obs.Toleration.TolerationSeconds); d != minTime {
				t.Fatalf("ObservedDeadline: deciding toleration gives %v, want the minimum %v", d, minTime)
			}
		}
	})
}

// startsKnown reports whether every NoExecute taint's countdown starts at a real time at or
// before now, so that Deadline's answer cannot move as now advances.
func startsKnown(taints []v1.Taint, fallback, now time.Time) bool {
	for i := range taints {
		if taints[i].Effect != v1.TaintEffectNoExecute {
			continue
		}
		start := fallback
		if taints[i].TimeAdded != nil && !taints[i].TimeAdded.Time.IsZero() {
			start = taints[i].TimeAdded.Time
		}
		if start.IsZero() || start.After(now) {
			return false
		}
	}
	return true
}

// checkEvictionInvariants checks what every Eviction must satisfy.
func checkEvictionInvariants(t *testing.T, fn string, e tolerations.Eviction, taints []v1.Taint, tols []v1.Toleration, now time.Time, opts tolerations.Options) {
	t.Helper()
	switch e.Verdict {
	case tolerations.Stay:
		if !e.At.IsZero() || e.Taint != nil || e.Toleration != nil {
			t.Fatalf("%s: got Stay with %+v, want zero At and nil Taint and Toleration", fn, e)
		}
		return
	case tolerations.EvictNow:
		if e.At != now {
			t.Fatalf("%s: got EvictNow at %v, want now %v", fn, e.At, now)
		}
	case tolerations.EvictAt:
		if !e.At.After(now) {
			t.Fatalf("%s: got EvictAt at %v, want after now %v", fn, e.At, now)
		}
		if e.Toleration == nil || e.Toleration.TolerationSeconds == nil {
			t.Fatalf("%s: got EvictAt with toleration %+v, want a finite one", fn, e.Toleration)
		}
	default:
		t.Fatalf("%s: got verdict %v, want Stay, EvictNow or EvictAt", fn, e.Verdict)
	}
	ti := index(taints, e.Taint)
	if ti < 0 || taints[ti].Effect != v1.TaintEffectNoExecute {
		t.Fatalf("%s: got Taint %p (index %d), want a NoExecute taint of the input", fn, e.Taint, ti)
	}
	first := -1
	for j := range tols {
		if upstreamTolerates(&tols[j], e.Taint, opts) {
			first = j
			break
		}
	}
	if got := index(tols, e.Toleration); got != first {
		t.Fatalf("%s: got Toleration index %d, want %d (the first that tolerates the taint)", fn, got, first)
	}
}
