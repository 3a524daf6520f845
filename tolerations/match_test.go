package tolerations_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/tolerations"
)

func TestNoExecuteTaints(t *testing.T) {
	tests := []struct {
		name   string
		taints []v1.Taint
		want   []string // keys
	}{
		{name: "nil", taints: nil, want: nil},
		{name: "empty", taints: []v1.Taint{}, want: nil},
		{
			// kube's TestFilterNoExecuteTaints.
			name: "kube: NoExecute and NoSchedule",
			taints: []v1.Taint{
				{Key: "one", Value: "one", Effect: v1.TaintEffectNoExecute},
				{Key: "two", Value: "two", Effect: v1.TaintEffectNoSchedule},
			},
			want: []string{"one"},
		},
		{
			name: "no NoExecute",
			taints: []v1.Taint{
				{Key: "a", Effect: v1.TaintEffectNoSchedule},
				{Key: "b", Effect: v1.TaintEffectPreferNoSchedule},
				{Key: "c", Effect: ""},
			},
			want: nil,
		},
		{
			name: "mixed keeps order",
			taints: []v1.Taint{
				{Key: "a", Effect: v1.TaintEffectNoSchedule},
				{Key: "b", Effect: v1.TaintEffectNoExecute},
				{Key: "c", Effect: ""},
				{Key: "d", Effect: v1.TaintEffectNoExecute},
				{Key: "e", Effect: "noexecute"},
				{Key: "f", Effect: v1.TaintEffectNoExecute},
			},
			want: []string{"b", "d", "f"},
		},
		{
			name:   "all NoExecute",
			taints: []v1.Taint{noExec("a"), noExec("b")},
			want:   []string{"a", "b"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tolerations.NoExecuteTaints(tc.taints)
			if tc.want == nil {
				assert.Nil(t, got, "got %v, want nil", got)
				return
			}
			var keys []string
			for _, taint := range got {
				assert.Equal(t, v1.TaintEffectNoExecute, taint.Effect, "got effect %q, want NoExecute", taint.Effect)
				keys = append(keys, taint.Key)
			}
			assert.Equal(t, tc.want, keys, "got keys %v, want %v", keys, tc.want)
		})
	}
}

func TestNoExecuteTaintsAliasing(t *testing.T) {
	t.Run("all NoExecute returns the input itself", func(t *testing.T) {
		in := []v1.Taint{noExec("a"), noExec("b")}
		got := tolerations.NoExecuteTaints(in)
		require.Len(t, got, 2)
		assert.Same(t, &in[0], &got[0], "got a copy, want the input slice")
	})
	t.Run("mixed returns a copy", func(t *testing.T) {
		in := []v1.Taint{noExec("a"), {Key: "b", Effect: v1.TaintEffectNoSchedule}}
		got := tolerations.NoExecuteTaints(in)
		require.Len(t, got, 1)
		got[0].Key = "changed"
		assert.Equal(t, "a", in[0].Key, "got input key %q after modifying the result, want %q", in[0].Key, "a")
	})
}

func TestTolerates(t *testing.T) {
	off := tolerations.Options{}
	on := tolerations.Options{ComparisonOperators: true}
	const (
		noExecute = v1.TaintEffectNoExecute
		noSched   = v1.TaintEffectNoSchedule
		preferNo  = v1.TaintEffectPreferNoSchedule
		opEqual   = v1.TolerationOpEqual
		opExists  = v1.TolerationOpExists
		opLt      = v1.TolerationOpLt
		opGt      = v1.TolerationOpGt
	)
	num := func(op v1.TolerationOperator, tolValue, taintValue string) (v1.Toleration, v1.Taint) {
		return v1.Toleration{Key: "n", Operator: op, Value: tolValue, Effect: noExecute},
			v1.Taint{Key: "n", Value: taintValue, Effect: noExecute}
	}
	type tcase struct {
		name  string
		tol   v1.Toleration
		taint v1.Taint
		opts  tolerations.Options
		want  bool
	}
	tests := []tcase{
		{"equal key value effect", v1.Toleration{Key: "k", Operator: opEqual, Value: "v", Effect: noExecute}, v1.Taint{Key: "k", Value: "v", Effect: noExecute}, off, true},
		{"empty operator means Equal", v1.Toleration{Key: "k", Value: "v", Effect: noExecute}, v1.Taint{Key: "k", Value: "v", Effect: noExecute}, off, true},
		{"empty operator, other value", v1.Toleration{Key: "k", Value: "v", Effect: noExecute}, v1.Taint{Key: "k", Value: "w", Effect: noExecute}, off, false},
		{"Equal, other value", v1.Toleration{Key: "k", Operator: opEqual, Value: "v", Effect: noExecute}, v1.Taint{Key: "k", Value: "w", Effect: noExecute}, off, false},
		{"Equal, empty value vs value", v1.Toleration{Key: "k", Operator: opEqual, Effect: noExecute}, v1.Taint{Key: "k", Value: "v", Effect: noExecute}, off, false},
		{"Equal, both values empty", v1.Toleration{Key: "k", Operator: opEqual, Effect: noExecute}, v1.Taint{Key: "k", Effect: noExecute}, off, true},
		{"Equal is case sensitive", v1.Toleration{Key: "k", Operator: opEqual, Value: "V", Effect: noExecute}, v1.Taint{Key: "k", Value: "v", Effect: noExecute}, off, false},
		{"Exists ignores value", v1.Toleration{Key: "k", Operator: opExists, Effect: noExecute}, v1.Taint{Key: "k", Value: "anything", Effect: noExecute}, off, true},
		{"Exists with a value still matches", v1.Toleration{Key: "k", Operator: opExists, Value: "x", Effect: noExecute}, v1.Taint{Key: "k", Value: "y", Effect: noExecute}, off, true},
		{"Exists, other key", v1.Toleration{Key: "k", Operator: opExists, Effect: noExecute}, v1.Taint{Key: "other", Effect: noExecute}, off, false},
		{"empty key Exists matches any key", v1.Toleration{Operator: opExists}, v1.Taint{Key: "node.kubernetes.io/unreachable", Effect: noExecute}, off, true},
		{"empty key Exists matches empty key", v1.Toleration{Operator: opExists}, v1.Taint{Effect: noExecute}, off, true},
		{"empty key Exists with effect, other effect", v1.Toleration{Operator: opExists, Effect: noSched}, v1.Taint{Key: "k", Effect: noExecute}, off, false},
		{"empty key Equal compares values", v1.Toleration{Operator: opEqual, Value: "v"}, v1.Taint{Key: "any", Value: "v", Effect: noExecute}, off, true},
		{"empty key Equal, other value", v1.Toleration{Operator: opEqual, Value: "v"}, v1.Taint{Key: "any", Value: "w", Effect: noExecute}, off, false},
		{"key is case sensitive", v1.Toleration{Key: "K", Operator: opExists}, v1.Taint{Key: "k", Effect: noExecute}, off, false},
		{"empty effect matches NoExecute", v1.Toleration{Key: "k", Operator: opExists}, v1.Taint{Key: "k", Effect: noExecute}, off, true},
		{"empty effect matches NoSchedule", v1.Toleration{Key: "k", Operator: opExists}, v1.Taint{Key: "k", Effect: noSched}, off, true},
		{"empty effect matches PreferNoSchedule", v1.Toleration{Key: "k", Operator: opExists}, v1.Taint{Key: "k", Effect: preferNo}, off, true},
		{"empty effect matches empty effect", v1.Toleration{Key: "k", Operator: opExists}, v1.Taint{Key: "k"}, off, true},
		{"NoSchedule does not match NoExecute", v1.Toleration{Key: "k", Operator: opExists, Effect: noSched}, v1.Taint{Key: "k", Effect: noExecute}, off, false},
		{"NoExecute does not match empty taint effect", v1.Toleration{Key: "k", Operator: opExists, Effect: noExecute}, v1.Taint{Key: "k"}, off, false},
		{"unknown operator", v1.Toleration{Key: "k", Operator: "In", Value: "v", Effect: noExecute}, v1.Taint{Key: "k", Value: "v", Effect: noExecute}, on, false},
		{"lower-case exists is unknown", v1.Toleration{Key: "k", Operator: "exists"}, v1.Taint{Key: "k", Effect: noExecute}, on, false},
		{"lower-case equal is unknown", v1.Toleration{Key: "k", Operator: "equal", Value: "v"}, v1.Taint{Key: "k", Value: "v", Effect: noExecute}, on, false},
		{"empty key unknown operator", v1.Toleration{Operator: "NotIn"}, v1.Taint{Key: "k", Effect: noExecute}, on, false},
	}
	numeric := []struct {
		name            string
		op              v1.TolerationOperator
		tolVal, taintVl string
		want            bool // with the option on; always false with it off
	}{
		{"Lt smaller", opLt, "10", "5", true},
		{"Lt equal", opLt, "10", "10", false},
		{"Lt larger", opLt, "10", "11", false},
		{"Gt larger", opGt, "10", "11", true},
		{"Gt equal", opGt, "10", "10", false},
		{"Gt smaller", opGt, "10", "9", false},
		{"Lt zero", opLt, "1", "0", true},
		{"Gt negatives", opGt, "-10", "-5", true},
		{"Lt negatives", opLt, "-5", "-10", true},
		{"Gt max int64", opGt, "9223372036854775806", "9223372036854775807", true},
		{"Lt min int64", opLt, "0", "-9223372036854775808", true},
		{"Gt min int64 toleration", opGt, "-9223372036854775808", "0", true},
		{"taint beyond int64", opGt, "0", "9223372036854775808", false},
		{"toleration beyond int64", opLt, "9223372036854775808", "0", false},
		{"taint below int64", opLt, "0", "-9223372036854775809", false},
		{"taint huge", opGt, "0", "99999999999999999999999", false},
		{"taint leading zero", opLt, "10", "05", false},
		{"toleration leading zero", opLt, "010", "5", false},
		{"taint double zero", opLt, "10", "00", false},
		{"taint plus sign", opGt, "0", "+1", false},
		{"toleration plus sign", opLt, "+10", "1", false},
		{"taint minus zero", opLt, "10", "-0", false},
		{"toleration minus zero", opGt, "-0", "5", false},
		{"taint negative leading zero", opLt, "10", "-05", false},
		{"lone minus", opLt, "10", "-", false},
		{"taint empty", opLt, "10", "", false},
		{"toleration empty", opGt, "", "5", false},
		{"taint not a number", opLt, "10", "abc", false},
		{"taint decimal", opLt, "10", "1.5", false},
		{"taint exponent", opLt, "10000", "1e3", false},
		{"taint hex", opLt, "100", "0x10", false},
		{"taint space", opLt, "10", " 5", false},
		{"taint trailing space", opLt, "10", "5 ", false},
		{"taint underscore", opLt, "10000", "1_000", false},
		{"taint unicode digit", opLt, "10", "\u0665", false},
	}
	for _, n := range numeric {
		tol, taint := num(n.op, n.tolVal, n.taintVl)
		tests = append(tests,
			tcase{n.name + " (on)", tol, taint, on, n.want},
			tcase{n.name + " (off)", tol, taint, off, false})
	}
	tests = append(tests,
		tcase{"Lt other key", v1.Toleration{Key: "n", Operator: opLt, Value: "10"}, v1.Taint{Key: "m", Value: "5", Effect: noExecute}, on, false},
		tcase{"Gt empty key, empty effect", v1.Toleration{Operator: opGt, Value: "10"}, v1.Taint{Key: "m", Value: "50", Effect: noSched}, on, true},
	)

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tolerations.Tolerates(&tc.tol, &tc.taint, tc.opts)
			assert.Equal(t, tc.want, got, "got %v, want %v", got, tc.want)
			// The table is kube's behaviour: check it against kube too.
			up := upstreamTolerates(&tc.tol, &tc.taint, tc.opts)
			assert.Equal(t, tc.want, up, "k8s.io/api ToleratesTaint: got %v, want %v", up, tc.want)
		})
	}
}

func TestToleratesNil(t *testing.T) {
	tol := &v1.Toleration{Operator: v1.TolerationOpExists}
	taint := &v1.Taint{Key: "k", Effect: v1.TaintEffectNoExecute}
	tests := []struct {
		name  string
		tol   *v1.Toleration
		taint *v1.Taint
		want  bool
	}{
		{"both set", tol, taint, true},
		{"nil toleration", nil, taint, false},
		{"nil taint", tol, nil, false},
		{"both nil", nil, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tolerations.Tolerates(tc.tol, tc.taint, tolerations.Options{})
			assert.Equal(t, tc.want, got, "got %v, want %v", got, tc.want)
		})
	}
}

func TestMatch(t *testing.T) {
	forever := exists("k", nil)
	finite := exists("k", secs(60))
	all := v1.Toleration{Operator: v1.TolerationOpExists}
	tests := []struct {
		name   string
		taints []v1.Taint
		tols   []v1.Toleration
		opts   tolerations.Options
		want   []v1.Toleration // nil with wantOK false
		wantOK bool
	}{
		{name: "nil taints, nil tolerations", want: []v1.Toleration{}, wantOK: true},
		{name: "no taints", tols: []v1.Toleration{forever}, want: []v1.Toleration{}, wantOK: true},
		{name: "only NoSchedule taints, untolerated", taints: []v1.Taint{{Key: "a", Effect: v1.TaintEffectNoSchedule}, {Key: "b", Effect: v1.TaintEffectPreferNoSchedule}}, want: []v1.Toleration{}, wantOK: true},
		{name: "taint but no tolerations", taints: []v1.Taint{noExec("k")}, wantOK: false},
		{name: "taint, empty toleration list", taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{}, wantOK: false},
		{name: "one taint tolerated", taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{finite}, want: []v1.Toleration{finite}, wantOK: true},
		{name: "one tolerated, one not", taints: []v1.Taint{noExec("k"), noExec("other")}, tols: []v1.Toleration{finite}, wantOK: false},
		{name: "one not tolerated, one tolerated", taints: []v1.Taint{noExec("other"), noExec("k")}, tols: []v1.Toleration{finite}, wantOK: false},
		{
			name:   "untolerated NoSchedule taint is ignored",
			taints: []v1.Taint{{Key: "x", Effect: v1.TaintEffectNoSchedule}, noExec("k")},
			tols:   []v1.Toleration{finite},
			want:   []v1.Toleration{finite},
			wantOK: true,
		},
		{
			name:   "in taint order",
			taints: []v1.Taint{noExec("b"), noExec("a")},
			tols:   []v1.Toleration{exists("a", secs(1)), exists("b", secs(2))},
			want:   []v1.Toleration{exists("b", secs(2)), exists("a", secs(1))},
			wantOK: true,
		},
		{
			name:   "one toleration used twice",
			taints: []v1.Taint{noExec("a"), noExec("b")},
			tols:   []v1.Toleration{all},
			want:   []v1.Toleration{all, all},
			wantOK: true,
		},
		{name: "finite before forever: finite wins", taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{finite, forever}, want: []v1.Toleration{finite}, wantOK: true},
		{name: "forever before finite: forever wins", taints: []v1.Taint{noExec("k")}, tols: []v1.Toleration{forever, finite}, want: []v1.Toleration{forever}, wantOK: true},
		{
			name:   "non-matching tolerations are skipped",
			taints: []v1.Taint{noExec("k")},
			tols:   []v1.Toleration{exists("other", nil), {Key: "k", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}, finite},
			want:   []v1.Toleration{finite},
			wantOK: true,
		},
		{
			name:   "toleration with empty effect tolerates NoExecute",
			taints: []v1.Taint{noExec("k")},
			tols:   []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}},
			want:   []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}},
			wantOK: true,
		},
		{
			name:   "Lt off by default",
			taints: []v1.Taint{{Key: "n", Value: "3", Effect: v1.TaintEffectNoExecute}},
			tols:   []v1.Toleration{{Key: "n", Operator: v1.TolerationOpLt, Value: "5"}},
			wantOK: false,
		},
		{
			name:   "Lt on",
			taints: []v1.Taint{{Key: "n", Value: "3", Effect: v1.TaintEffectNoExecute}},
			tols:   []v1.Toleration{{Key: "n", Operator: v1.TolerationOpLt, Value: "5"}},
			opts:   tolerations.Options{ComparisonOperators: true},
			want:   []v1.Toleration{{Key: "n", Operator: v1.TolerationOpLt, Value: "5"}},
			wantOK: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The table is kube's behaviour: check it against kube too.
			upOK, upUsed := kubeMatchingTolerations(tc.taints, tc.tols, tc.opts)
			assert.Equal(t, tc.wantOK, upOK, "kube: got ok %v, want %v", upOK, tc.wantOK)
			if tc.wantOK {
				assert.Equal(t, tc.want, upUsed, "kube: got %v, want %v", upUsed, tc.want)
			}

			got, ok := tolerations.Match(tc.taints, tc.tols, tc.opts)
			require.Equal(t, tc.wantOK, ok, "got ok %v, want %v", ok, tc.wantOK)
			if !tc.wantOK {
				assert.Nil(t, got, "got %v, want nil", got)
				return
			}
			require.NotNil(t, got, "got nil, want a non-nil slice")
			assert.Equal(t, tc.want, got, "got %v, want %v", got, tc.want)
		})
	}
}
