package tolerations_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// maxDuration is the largest whole-second duration: what huge tolerationSeconds clamp to in
// MinTolerationTime and ObservedDeadline.
const maxDuration = time.Duration(math.MaxInt64/int64(time.Second)) * time.Second

// latest is the latest time a time.Time holds, to the second: where Deadline's sums stop.
var latest = time.Unix(latestUnix, 0).UTC()

func TestMinTolerationTime(t *testing.T) {
	tol := func(s *int64) v1.Toleration { return v1.Toleration{TolerationSeconds: s} }
	tests := []struct {
		name        string
		used        []v1.Toleration
		wantMin     time.Duration
		wantExpires bool
	}{
		// kube's TestGetMinTolerationTime, with -1 (forever) read as expires false.
		{"kube: empty list evicts now", []v1.Toleration{}, 0, true},
		{"kube: nil seconds is forever", []v1.Toleration{tol(nil)}, 0, false},
		{"kube: 1 and 2", []v1.Toleration{tol(secs(1)), tol(secs(2))}, time.Second, true},
		{"kube: 1 and nil", []v1.Toleration{tol(secs(1)), tol(nil)}, time.Second, true},
		{"kube: nil and 1", []v1.Toleration{tol(nil), tol(secs(1))}, time.Second, true},

		{"nil list evicts now", nil, 0, true},
		{"all nil is forever", []v1.Toleration{tol(nil), tol(nil), tol(nil)}, 0, false},
		{"zero", []v1.Toleration{tol(secs(0))}, 0, true},
		{"negative", []v1.Toleration{tol(secs(-5))}, 0, true},
		{"min int64", []v1.Toleration{tol(secs(math.MinInt64))}, 0, true},
		{"negative after positive", []v1.Toleration{tol(secs(300)), tol(secs(-1))}, 0, true},
		{"zero among nils", []v1.Toleration{tol(nil), tol(secs(0)), tol(nil)}, 0, true},
		{"smallest of several", []v1.Toleration{tol(secs(30)), tol(secs(7)), tol(nil), tol(secs(600))}, 7 * time.Second, true},
		{"max int64 clamped, not negative", []v1.Toleration{tol(secs(math.MaxInt64))}, maxDuration, true},
		{"just above the clamp", []v1.Toleration{tol(secs(math.MaxInt64/int64(time.Second) + 1))}, maxDuration, true},
		{"at the clamp", []v1.Toleration{tol(secs(math.MaxInt64 / int64(time.Second)))}, maxDuration, true},
		{"huge then small", []v1.Toleration{tol(secs(math.MaxInt64)), tol(secs(10))}, 10 * time.Second, true},
		{"small then huge", []v1.Toleration{tol(secs(10)), tol(secs(math.MaxInt64))}, 10 * time.Second, true},
		{"nil then huge", []v1.Toleration{tol(nil), tol(secs(math.MaxInt64))}, maxDuration, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotMin, gotExpires := tolerations.MinTolerationTime(tc.used)
			assert.Equal(t, tc.wantExpires, gotExpires, "got expires %v, want %v", gotExpires, tc.wantExpires)
			assert.Equal(t, tc.wantMin, gotMin, "got %v, want %v", gotMin, tc.wantMin)
			assert.GreaterOrEqual(t, gotMin, time.Duration(0), "got negative %v, want >= 0", gotMin)
		})
	}
}

func TestVerdictString(t *testing.T) {
	tests := []struct {
		v    tolerations.Verdict
		want string
	}{
		{tolerations.Stay, "Stay"},
		{tolerations.EvictNow, "EvictNow"},
		{tolerations.EvictAt, "EvictAt"},
		{3, "Verdict(3)"},
		{10, "Verdict(10)"},
		{255, "Verdict(255)"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			got := tc.v.String()
			assert.Equal(t, tc.want, got, "got %q, want %q", got, tc.want)
		})
	}
	t.Run("zero value is Stay", func(t *testing.T) {
		var v tolerations.Verdict
		assert.Equal(t, tolerations.Stay, v, "got %v, want Stay", v)
		var e tolerations.Eviction
		assert.Equal(t, tolerations.Stay, e.Verdict, "got %v, want Stay", e.Verdict)
	})
}

// evictionCase is one row of the Deadline and ObservedDeadline tables. The wanted taint and
// toleration are indexes into the row's own slices (-1 for nil), so the test also checks
// that the result points into the caller's slices.
type evictionCase struct {
	name    string
	taints  []v1.Taint
	tols    []v1.Toleration
	now     time.Time
	ref     time.Time // fallback for Deadline, since for ObservedDeadline
	opts    tolerations.Options
	verdict tolerations.Verdict
	at      time.Time
	wantTnt int
	wantTol int
}

func checkEviction(t *testing.T, tc evictionCase, got tolerations.Eviction) {
	t.Helper()
	assert.Equal(t, tc.verdict, got.Verdict, "got verdict %v, want %v", got.Verdict, tc.verdict)
	assert.True(t, got.At.Equal(tc.at), "got At %v, want %v", got.At, tc.at)
	if tc.at.IsZero() {
		assert.True(t, got.At.IsZero(), "got At %v, want the zero time", got.At)
	}
	gotTnt, gotTol := index(tc.taints, got.Taint), index(tc.tols, got.Toleration)
	assert.Equal(t, tc.wantTnt, gotTnt, "got Taint index %d, want %d", gotTnt, tc.wantTnt)
	assert.Equal(t, tc.wantTol, gotTol, "got Toleration index %d, want %d", gotTol, tc.wantTol)
}

func TestDeadline(t *testing.T) {
	now := t0
	ns := v1.Taint{Key: "ns", Effect: v1.TaintEffectNoSchedule}
	on := tolerations.Options{ComparisonOperators: true}
	tests := []evictionCase{
		{name: "no taints", now: now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1},
		{name: "no taints, tolerations", tols: []v1.Toleration{exists("k", secs(1))}, now: now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1},
		{name: "only NoSchedule taints, untolerated", taints: []v1.Taint{ns, {Key: "p", Effect: v1.TaintEffectPreferNoSchedule}}, now: now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1},
		{name: "untolerated", taints: []v1.Taint{noExecAt("k", now.Add(-time.Hour))}, now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1},
		{name: "untolerated, no tolerations at all", taints: []v1.Taint{noExec("k")}, tols: nil, now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1},
		{name: "tolerated forever", taints: []v1.Taint{noExecAt("k", now.Add(-time.Hour))}, tols: []v1.Toleration{exists("k", nil)}, now: now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1},
		{
			name:   "TimeAdded in the past, deadline ahead",
			taints: []v1.Taint{noExecAt("k", now.Add(-100*time.Second))}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(200 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "TimeAdded in the past, deadline passed",
			taints: []v1.Taint{noExecAt("k", now.Add(-400*time.Second))}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "deadline exactly now",
			taints: []v1.Taint{noExecAt("k", now.Add(-300*time.Second))}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "deadline one nanosecond ahead",
			taints: []v1.Taint{noExecAt("k", now.Add(-300*time.Second+time.Nanosecond))}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(time.Nanosecond), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "TimeAdded in the future counts as now",
			taints: []v1.Taint{noExecAt("k", now.Add(time.Hour))}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(300 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "TimeAdded in the future, fallback ignored",
			taints: []v1.Taint{noExecAt("k", now.Add(time.Hour))}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, ref: now.Add(-time.Hour), verdict: tolerations.EvictAt, at: now.Add(300 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "TimeAdded nil uses fallback",
			taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, ref: now.Add(-100 * time.Second), verdict: tolerations.EvictAt, at: now.Add(200 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "TimeAdded nil, fallback passed",
			taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, ref: now.Add(-time.Hour), verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "TimeAdded nil, zero fallback counts as now",
			taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(300 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "TimeAdded nil, fallback in the future counts as now",
			taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, ref: now.Add(time.Minute), verdict: tolerations.EvictAt, at: now.Add(300 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			// A zero metav1.Time is "unset" (it marshals as null), the same as nil.
			name:   "TimeAdded zero, not nil, uses fallback",
			taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{}}}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, ref: now.Add(-100 * time.Second), verdict: tolerations.EvictAt, at: now.Add(200 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "TimeAdded set, fallback ignored",
			taints: []v1.Taint{noExecAt("k", now.Add(-100*time.Second))}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, ref: now.Add(-250 * time.Second), verdict: tolerations.EvictAt, at: now.Add(200 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "zero seconds",
			taints: []v1.Taint{noExecAt("k", now)}, tols: []v1.Toleration{exists("k", secs(0))},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "negative seconds",
			taints: []v1.Taint{noExecAt("k", now)}, tols: []v1.Toleration{exists("k", secs(-10))},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "min int64 seconds",
			taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", secs(math.MinInt64))},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "max int64 seconds does not overflow into the past: the latest time",
			taints: []v1.Taint{noExecAt("k", now)}, tols: []v1.Toleration{exists("k", secs(math.MaxInt64))},
			now: now, verdict: tolerations.EvictAt, at: latest, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "max int64 seconds, old TimeAdded",
			taints: []v1.Taint{noExecAt("k", now.AddDate(-10, 0, 0))}, tols: []v1.Toleration{exists("k", secs(math.MaxInt64))},
			now: now, verdict: tolerations.EvictAt, at: latest, wantTnt: 0, wantTol: 0,
		},
		{
			// A clamp to 292 years would put this deadline in 1792 and evict at once.
			name:   "1,000 years of seconds, TimeAdded in 1500: counted in full",
			taints: []v1.Taint{noExecAt("k", time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC))}, tols: []v1.Toleration{exists("k", secs(1000*365*24*3600))},
			now: now, verdict: tolerations.EvictAt, at: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1000*365), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "max int64 seconds, TimeAdded in year 1: the latest time, not the past",
			taints: []v1.Taint{noExecAt("k", time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC))}, tols: []v1.Toleration{exists("k", secs(math.MaxInt64))},
			now: now, verdict: tolerations.EvictAt, at: latest, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "1,000 years of seconds, TimeAdded 5 years back",
			taints: []v1.Taint{noExecAt("k", now.AddDate(-5, 0, 0))}, tols: []v1.Toleration{exists("k", secs(1000*365*24*3600))},
			now: now, verdict: tolerations.EvictAt, at: now.AddDate(-5, 0, 0).AddDate(0, 0, 1000*365), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "earliest deadline over several taints",
			taints: []v1.Taint{noExecAt("a", now.Add(-10*time.Second)), noExecAt("b", now.Add(-200*time.Second)), noExecAt("c", now.Add(-50*time.Second))},
			tols:   []v1.Toleration{exists("a", secs(300)), exists("b", secs(300)), exists("c", secs(300))},
			now:    now, verdict: tolerations.EvictAt, at: now.Add(100 * time.Second), wantTnt: 1, wantTol: 1,
		},
		{
			name:   "earliest deadline, not smallest seconds",
			taints: []v1.Taint{noExecAt("a", now), noExecAt("b", now.Add(-time.Hour))},
			tols:   []v1.Toleration{exists("a", secs(60)), exists("b", secs(3660))},
			now:    now, verdict: tolerations.EvictAt, at: now.Add(60 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "earliest deadline, later taint decides",
			taints: []v1.Taint{noExecAt("a", now), noExecAt("b", now)},
			tols:   []v1.Toleration{exists("b", secs(30)), exists("a", secs(60))},
			now:    now, verdict: tolerations.EvictAt, at: now.Add(30 * time.Second), wantTnt: 1, wantTol: 0,
		},
		{
			name:   "tie: first taint decides",
			taints: []v1.Taint{noExecAt("a", now), noExecAt("b", now)},
			tols:   []v1.Toleration{exists("b", secs(60)), exists("a", secs(60))},
			now:    now, verdict: tolerations.EvictAt, at: now.Add(60 * time.Second), wantTnt: 0, wantTol: 1,
		},
		{
			name:   "one passed, one ahead: EvictNow names the passed one",
			taints: []v1.Taint{noExecAt("a", now), noExecAt("b", now.Add(-time.Hour))},
			tols:   []v1.Toleration{exists("a", secs(60)), exists("b", secs(60))},
			now:    now, verdict: tolerations.EvictNow, at: now, wantTnt: 1, wantTol: 1,
		},
		{
			name:   "one tolerated, one not",
			taints: []v1.Taint{noExecAt("a", now), noExecAt("b", now)},
			tols:   []v1.Toleration{exists("a", nil)},
			now:    now, verdict: tolerations.EvictNow, at: now, wantTnt: 1, wantTol: -1,
		},
		{
			name:   "finite first, then untolerated",
			taints: []v1.Taint{noExecAt("a", now), noExecAt("b", now)},
			tols:   []v1.Toleration{exists("a", secs(60))},
			now:    now, verdict: tolerations.EvictNow, at: now, wantTnt: 1, wantTol: -1,
		},
		{
			name:   "forever and finite",
			taints: []v1.Taint{noExecAt("a", now), noExecAt("b", now)},
			tols:   []v1.Toleration{exists("a", nil), exists("b", secs(60))},
			now:    now, verdict: tolerations.EvictAt, at: now.Add(60 * time.Second), wantTnt: 1, wantTol: 1,
		},
		{
			name:   "finite before forever for the same taint: finite wins",
			taints: []v1.Taint{noExecAt("k", now)},
			tols:   []v1.Toleration{exists("k", secs(60)), exists("k", nil)},
			now:    now, verdict: tolerations.EvictAt, at: now.Add(60 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "forever before finite for the same taint: forever stays",
			taints: []v1.Taint{noExecAt("k", now)},
			tols:   []v1.Toleration{exists("k", nil), exists("k", secs(60))},
			now:    now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1,
		},
		{
			name:   "untolerated NoSchedule taint is ignored",
			taints: []v1.Taint{ns, noExecAt("k", now)},
			tols:   []v1.Toleration{exists("k", secs(60))},
			now:    now, verdict: tolerations.EvictAt, at: now.Add(60 * time.Second), wantTnt: 1, wantTol: 0,
		},
		{
			name:   "empty key Exists tolerates every taint",
			taints: []v1.Taint{noExecAt("a", now.Add(-time.Minute)), noExecAt("b", now)},
			tols:   []v1.Toleration{{Operator: v1.TolerationOpExists, TolerationSeconds: secs(120)}},
			now:    now, verdict: tolerations.EvictAt, at: now.Add(time.Minute), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "Lt off",
			taints: []v1.Taint{{Key: "n", Value: "3", Effect: v1.TaintEffectNoExecute}},
			tols:   []v1.Toleration{{Key: "n", Operator: v1.TolerationOpLt, Value: "5", Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(60)}},
			now:    now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1,
		},
		{
			name:   "Lt on",
			taints: []v1.Taint{{Key: "n", Value: "3", Effect: v1.TaintEffectNoExecute}},
			tols:   []v1.Toleration{{Key: "n", Operator: v1.TolerationOpLt, Value: "5", Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(60)}},
			now:    now, opts: on, verdict: tolerations.EvictAt, at: now.Add(time.Minute), wantTnt: 0, wantTol: 0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tolerations.Deadline(tc.taints, tc.tols, tc.now, tc.ref, tc.opts)
			checkEviction(t, tc, got)
			// The brute force agrees with the table.
			want := bruteDeadline(tc.taints, tc.tols, tc.now, tc.ref, tc.opts)
			assert.Equal(t, want, got, "got %+v, want brute force %+v", got, want)
		})
	}
}

// TestDeadlineRestartSafe checks the point of Deadline: asked again later, with the same
// taints (as after a controller restart), it gives the same deadline.
func TestDeadlineRestartSafe(t *testing.T) {
	taints := []v1.Taint{
		noExecAt("node.kubernetes.io/unreachable", t0.Add(-30*time.Second)),                    // due t0+270s
		{Key: "node.kubernetes.io/not-ready", Effect: v1.TaintEffectNoExecute},                 // due firstSeen+600s
		{Key: "example.com/drain", Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{}}, // due firstSeen+200s
	}
	tols := []v1.Toleration{
		exists("node.kubernetes.io/not-ready", secs(600)),
		exists("node.kubernetes.io/unreachable", secs(300)),
		exists("example.com/drain", secs(200)),
	}
	firstSeen := t0.Add(-10 * time.Second)
	want := t0.Add(190 * time.Second)
	for _, later := range []time.Duration{0, time.Second, time.Minute, 189 * time.Second} {
		t.Run(later.String(), func(t *testing.T) {
			got := tolerations.Deadline(taints, tols, t0.Add(later), firstSeen, tolerations.Options{})
			require.Equal(t, tolerations.EvictAt, got.Verdict, "got %v, want EvictAt", got.Verdict)
			assert.True(t, got.At.Equal(want), "got %v, want %v", got.At, want)
		})
	}
	t.Run("at the deadline", func(t *testing.T) {
		got := tolerations.Deadline(taints, tols, want, firstSeen, tolerations.Options{})
		assert.Equal(t, tolerations.EvictNow, got.Verdict, "got %v, want EvictNow", got.Verdict)
		assert.True(t, got.At.Equal(want), "got %v, want %v", got.At, want)
	})
}

// TestDeadlineDoesNotModifyInputs checks that Deadline and ObservedDeadline leave the
// caller's slices alone.
func TestDeadlineDoesNotModifyInputs(t *testing.T) {
	taints, tols := benchNode(), benchPod()
	wantTaints, wantTols := benchNode(), benchPod()
	tolerations.Deadline(taints, tols, t0, t0.Add(-time.Hour), tolerations.Options{})
	tolerations.ObservedDeadline(taints, tols, t0.Add(-time.Hour), t0, tolerations.Options{})
	tolerations.Match(taints, tols, tolerations.Options{})
	assert.Equal(t, wantTaints, taints, "got taints %v, want %v", taints, wantTaints)
	assert.Equal(t, wantTols, tols, "got tolerations %v, want %v", tols, wantTols)
}

func TestObservedDeadline(t *testing.T) {
	now := t0
	old := now.Add(-24 * time.Hour) // a TimeAdded that ObservedDeadline must not read
	ns := v1.Taint{Key: "ns", Effect: v1.TaintEffectNoSchedule}
	tests := []evictionCase{
		{name: "no taints", now: now, ref: now.Add(-time.Hour), verdict: tolerations.Stay, wantTnt: -1, wantTol: -1},
		{name: "no NoExecute taints", taints: []v1.Taint{ns}, now: now, ref: now.Add(-time.Hour), verdict: tolerations.Stay, wantTnt: -1, wantTol: -1},
		{name: "untolerated", taints: []v1.Taint{noExec("k")}, now: now, ref: now.Add(-time.Hour), verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1},
		{name: "untolerated, since in the future", taints: []v1.Taint{noExec("k")}, now: now, ref: now.Add(time.Hour), verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: -1},
		{name: "second taint untolerated", taints: []v1.Taint{noExec("a"), noExec("b")}, tols: []v1.Toleration{exists("a", secs(60))}, now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 1, wantTol: -1},
		{name: "forever", taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", nil)}, now: now, ref: now.Add(-time.Hour), verdict: tolerations.Stay, wantTnt: -1, wantTol: -1},
		{
			name:   "since zero counts as now",
			taints: []v1.Taint{noExecAt("k", old)}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(300 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "since in the past",
			taints: []v1.Taint{noExecAt("k", old)}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, ref: now.Add(-100 * time.Second), verdict: tolerations.EvictAt, at: now.Add(200 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "since in the past, passed",
			taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, ref: now.Add(-400 * time.Second), verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "since exactly min ago",
			taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, ref: now.Add(-300 * time.Second), verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "since in the future counts as now",
			taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", secs(300))},
			now: now, ref: now.Add(time.Hour), verdict: tolerations.EvictAt, at: now.Add(300 * time.Second), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "zero seconds",
			taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", secs(0))},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 0, wantTol: 0,
		},
		{
			name:   "negative seconds",
			taints: []v1.Taint{noExec("a"), noExec("b")}, tols: []v1.Toleration{exists("a", secs(60)), exists("b", secs(-1))},
			now: now, verdict: tolerations.EvictNow, at: now, wantTnt: 1, wantTol: 1,
		},
		{
			name:   "smallest seconds decides, whatever TimeAdded says",
			taints: []v1.Taint{noExecAt("a", old), noExecAt("b", now)}, tols: []v1.Toleration{exists("a", secs(600)), exists("b", secs(60))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(time.Minute), wantTnt: 1, wantTol: 1,
		},
		{
			name:   "tie: first taint decides",
			taints: []v1.Taint{noExec("a"), noExec("b")}, tols: []v1.Toleration{exists("b", secs(60)), exists("a", secs(60))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(time.Minute), wantTnt: 0, wantTol: 1,
		},
		{
			name:   "forever and finite",
			taints: []v1.Taint{noExec("a"), noExec("b")}, tols: []v1.Toleration{exists("a", nil), exists("b", secs(60))},
			now: now, verdict: tolerations.EvictAt, at: now.Add(time.Minute), wantTnt: 1, wantTol: 1,
		},
		{
			name:   "finite before forever for the same taint: finite wins",
			taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", secs(60)), exists("k", nil)},
			now: now, verdict: tolerations.EvictAt, at: now.Add(time.Minute), wantTnt: 0, wantTol: 0,
		},
		{
			name:   "forever before finite for the same taint: stays",
			taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", nil), exists("k", secs(60))},
			now: now, verdict: tolerations.Stay, wantTnt: -1, wantTol: -1,
		},
		{
			name:   "max int64 seconds does not overflow into the past",
			taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{exists("k", secs(math.MaxInt64))},
			now: now, ref: now, verdict: tolerations.EvictAt, at: now.Add(maxDuration), wantTnt: 0, wantTol: 0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tolerations.ObservedDeadline(tc.taints, tc.tols, tc.ref, tc.now, tc.opts)
			checkEviction(t, tc, got)
			// Kube's own rule, from Match and MinTolerationTime, agrees with the table.
			v, at := kubeObserved(tc.taints, tc.tols, tc.ref, tc.now, tc.opts)
			assert.Equal(t, tc.verdict, v, "kube rule: got %v, want %v", v, tc.verdict)
			assert.True(t, at.Equal(tc.at), "kube rule: got %v, want %v", at, tc.at)
		})
	}
}

// TestObservedDeadlineRestartsCountdown pins what ObservedDeadline is for: forgetting since
// (a restart) restarts the countdown, as in kube (issue 108268), unlike Deadline.
func TestObservedDeadlineRestartsCountdown(t *testing.T) {
	taints := []v1.Taint{noExecAt("node.kubernetes.io/unreachable", t0)}
	tols := []v1.Toleration{exists("node.kubernetes.io/unreachable", secs(300))}
	later := t0.Add(4 * time.Minute)

	kept := tolerations.ObservedDeadline(taints, tols, t0, later, tolerations.Options{})
	forgot := tolerations.ObservedDeadline(taints, tols, time.Time{}, later, tolerations.Options{})
	restartSafe := tolerations.Deadline(taints, tols, later, time.Time{}, tolerations.Options{})

	assert.True(t, kept.At.Equal(t0.Add(5*time.Minute)), "since kept: got %v, want %v", kept.At, t0.Add(5*time.Minute))
	assert.True(t, forgot.At.Equal(later.Add(5*time.Minute)), "since forgotten: got %v, want %v", forgot.At, later.Add(5*time.Minute))
	assert.True(t, restartSafe.At.Equal(t0.Add(5*time.Minute)), "Deadline: got %v, want %v", restartSafe.At, t0.Add(5*time.Minute))
}

func TestNoAllocations(t *testing.T) {
	// This also holds under -race (checked with go test -race), which CI uses.
	taints, tols := benchNode(), benchPod()
	opts := tolerations.Options{}
	dev := tolerations.Options{Rules: tolerations.DeviceRules}
	now, fallback := benchNow, benchNow.Add(-time.Minute)
	var sink tolerations.Eviction
	var ok bool
	tests := []struct {
		name string
		f    func()
	}{
		{"Deadline", func() { sink = tolerations.Deadline(taints, tols, now, fallback, opts) }},
		{"Deadline untolerated", func() { sink = tolerations.Deadline(taints, tols[:3], now, fallback, opts) }},
		{"ObservedDeadline", func() { sink = tolerations.ObservedDeadline(taints, tols, fallback, now, opts) }},
		{"Deadline, DeviceRules", func() { sink = tolerations.Deadline(taints, tols, now, fallback, dev) }},
		{"Deadline, DeviceRules, untolerated", func() { sink = tolerations.Deadline(taints, tols[:3], now, fallback, dev) }},
		{"ObservedDeadline, DeviceRules", func() { sink = tolerations.ObservedDeadline(taints, tols, fallback, now, dev) }},
		{"ToleratesDevice", func() {
			ok = tolerations.ToleratesDevice(&resourcev1.DeviceToleration{Key: "k", Operator: resourcev1.DeviceTolerationOpEqual, Value: "v"},
				&resourcev1.DeviceTaint{Key: "k", Value: "v", Effect: resourcev1.DeviceTaintEffectNoExecute})
		}},
		{"Tolerates with Lt", func() {
			ok = tolerations.Tolerates(&v1.Toleration{Key: "n", Operator: v1.TolerationOpLt, Value: "-9223372036854775808"},
				&v1.Taint{Key: "n", Value: "12345", Effect: v1.TaintEffectNoExecute}, tolerations.Options{ComparisonOperators: true})
		}},
		{"NoExecuteTaints, all NoExecute", func() { _ = tolerations.NoExecuteTaints(taints[:2]) }},
		{"MinTolerationTime", func() { _, ok = tolerations.MinTolerationTime(tols) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := testing.AllocsPerRun(200, tc.f)
			assert.Zero(t, got, "got %v allocs per call, want 0", got)
		})
	}
	// Use the sinks so the calls cannot be optimised away.
	assert.NotEqual(t, tolerations.Verdict(255), sink.Verdict, "got impossible verdict")
	_ = ok
}
