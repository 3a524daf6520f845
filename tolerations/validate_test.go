package tolerations_test

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// fieldErrors returns every *FieldError in err, which ValidateX joins with errors.Join.
func fieldErrors(t *testing.T, err error) []*tolerations.FieldError {
	t.Helper()
	var errs []error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []*tolerations.FieldError
	for _, e := range errs {
		var fe *tolerations.FieldError
		require.True(t, errors.As(e, &fe), "got %T (%v), want a *FieldError", e, e)
		out = append(out, fe)
	}
	return out
}

// checkValidation asserts that err reports exactly the fields in want (nil: err is nil),
// each with the package prefix and its path in the message, wrapping ErrInvalid.
func checkValidation(t *testing.T, err error, want []string, wantDetail string) {
	t.Helper()
	if len(want) == 0 {
		assert.NoError(t, err, "got %v, want nil", err)
		return
	}
	require.Error(t, err, "got nil, want errors for %v", want)
	assert.True(t, errors.Is(err, tolerations.ErrInvalid), "got errors.Is(err, ErrInvalid) false for %v, want true", err)
	var first *tolerations.FieldError
	require.True(t, errors.As(err, &first), "got no *FieldError in %v, want one", err)
	assert.Equal(t, want[0], first.Field, "got first field %q, want %q", first.Field, want[0])

	msg := err.Error()
	var got []string
	for _, fe := range fieldErrors(t, err) {
		got = append(got, fe.Field)
		assert.True(t, errors.Is(fe, tolerations.ErrInvalid), "got errors.Is(%v, ErrInvalid) false, want true", fe)
		assert.True(t, strings.HasPrefix(fe.Error(), "tolerations: "+fe.Field+": "), "got %q, want the prefix %q", fe.Error(), "tolerations: "+fe.Field+": ")
		assert.NotEmpty(t, fe.Detail, "got an empty Detail, want a reason")
	}
	sortedGot, sortedWant := append([]string(nil), got...), append([]string(nil), want...)
	sort.Strings(sortedGot)
	sort.Strings(sortedWant)
	assert.Equal(t, sortedWant, sortedGot, "got fields %v, want %v", got, want)
	for _, f := range want {
		assert.Contains(t, msg, "tolerations: "+f+": ", "got %q, want it to name %q", msg, f)
	}
	if wantDetail != "" {
		assert.Contains(t, msg, wantDetail, "got %q, want it to contain %q", msg, wantDetail)
	}
}

func TestValidateTaints(t *testing.T) {
	valid := []v1.Taint{
		{Key: "node.kubernetes.io/unreachable", Effect: v1.TaintEffectNoExecute},
		{Key: "node.kubernetes.io/unreachable", Effect: v1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectPreferNoSchedule},
		{Key: "example.com/maintenance", Value: "drain-1_2.3", Effect: v1.TaintEffectNoExecute, TimeAdded: added(t0)},
	}
	tests := []struct {
		name       string
		taints     []v1.Taint
		want       []string
		wantDetail string
	}{
		{name: "nil", taints: nil},
		{name: "empty", taints: []v1.Taint{}},
		{name: "valid", taints: valid},
		{name: "empty key", taints: []v1.Taint{{Effect: v1.TaintEffectNoExecute}}, want: []string{"taints[0].key"}, wantDetail: "must not be empty"},
		{name: "malformed key", taints: []v1.Taint{valid[0], {Key: "bad key!", Effect: v1.TaintEffectNoExecute}}, want: []string{"taints[1].key"}, wantDetail: `"bad key!"`},
		{name: "key with two slashes", taints: []v1.Taint{{Key: "a/b/c", Effect: v1.TaintEffectNoExecute}}, want: []string{"taints[0].key"}},
		{name: "key too long", taints: []v1.Taint{{Key: strings.Repeat("k", 64), Effect: v1.TaintEffectNoExecute}}, want: []string{"taints[0].key"}},
		{name: "malformed value", taints: []v1.Taint{{Key: "k", Value: "bad value", Effect: v1.TaintEffectNoExecute}}, want: []string{"taints[0].value"}},
		{name: "value too long", taints: []v1.Taint{valid[0], valid[1], {Key: "k", Value: strings.Repeat("v", 64), Effect: v1.TaintEffectNoExecute}}, want: []string{"taints[2].value"}},
		{name: "empty effect", taints: []v1.Taint{{Key: "k"}}, want: []string{"taints[0].effect"}, wantDetail: "effect is required"},
		{name: "unknown effect", taints: []v1.Taint{valid[0], {Key: "k", Effect: "NoScheduleNoAdmit"}}, want: []string{"taints[1].effect"}, wantDetail: `"NoScheduleNoAdmit"`},
		{name: "lower-case effect", taints: []v1.Taint{{Key: "k", Effect: "noexecute"}}, want: []string{"taints[0].effect"}},
		{
			name:       "duplicate key and effect",
			taints:     []v1.Taint{valid[0], valid[1], {Key: "node.kubernetes.io/unreachable", Value: "other", Effect: v1.TaintEffectNoExecute}},
			want:       []string{"taints[2]"},
			wantDetail: "unique by key and effect",
		},
		{name: "same key, other effect is fine", taints: []v1.Taint{valid[0], valid[1]}},
		{
			name:   "several problems, all reported",
			taints: []v1.Taint{{Key: "", Effect: ""}, {Key: "ok", Effect: "Bogus"}, {Key: "ok", Effect: "Bogus"}},
			want:   []string{"taints[0].key", "taints[0].effect", "taints[1].effect", "taints[2].effect", "taints[2]"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkValidation(t, tolerations.ValidateTaints(tc.taints), tc.want, tc.wantDetail)
		})
	}
}

func TestValidateTolerations(t *testing.T) {
	off := tolerations.Options{}
	on := tolerations.Options{ComparisonOperators: true}
	valid := []v1.Toleration{
		{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(300)},
		{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "infra", Effect: v1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "infra"}, // empty operator means Equal, empty effect all effects
		{Operator: v1.TolerationOpExists},  // tolerates everything
		{Key: "k", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(-5)},
		{Key: "k", Operator: v1.TolerationOpEqual, Effect: v1.TaintEffectPreferNoSchedule},
	}
	tests := []struct {
		name       string
		tols       []v1.Toleration
		opts       tolerations.Options
		want       []string
		wantDetail string
	}{
		{name: "nil", tols: nil},
		{name: "empty", tols: []v1.Toleration{}},
		{name: "valid", tols: valid},
		{name: "valid with the option", tols: valid, opts: on},
		{name: "unknown operator", tols: []v1.Toleration{valid[0], {Key: "k", Operator: "In", Value: "v"}}, want: []string{"tolerations[1].operator"}, wantDetail: `supported values: "Equal", "Exists"`},
		{name: "unknown operator lists Lt and Gt with the option", tols: []v1.Toleration{{Key: "k", Operator: "In"}}, opts: on, want: []string{"tolerations[0].operator"}, wantDetail: `"Lt", "Gt"`},
		{name: "lower-case operator", tols: []v1.Toleration{{Key: "k", Operator: "exists"}}, want: []string{"tolerations[0].operator"}},
		{name: "Exists with a value", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, Value: "v"}}, want: []string{"tolerations[0].value"}, wantDetail: "value must be empty"},
		{name: "empty key with Equal", tols: []v1.Toleration{valid[0], valid[1], {Operator: v1.TolerationOpEqual, Value: "v"}}, want: []string{"tolerations[2].operator"}, wantDetail: "operator must be Exists when key is empty"},
		{name: "empty key with empty operator", tols: []v1.Toleration{{}}, want: []string{"tolerations[0].operator"}},
		{name: "empty key with Lt", tols: []v1.Toleration{{Operator: v1.TolerationOpLt, Value: "5"}}, opts: on, want: []string{"tolerations[0].operator"}},
		{name: "empty key with unknown operator", tols: []v1.Toleration{{Operator: "In"}}, want: []string{"tolerations[0].operator", "tolerations[0].operator"}},
		{name: "seconds with NoSchedule", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule, TolerationSeconds: secs(60)}}, want: []string{"tolerations[0].effect"}, wantDetail: "effect must be NoExecute"},
		{name: "seconds with empty effect", tols: []v1.Toleration{valid[0], {Key: "k", Operator: v1.TolerationOpExists, TolerationSeconds: secs(60)}}, want: []string{"tolerations[1].effect"}, wantDetail: "effect must be NoExecute"},
		{name: "zero seconds with empty effect", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, TolerationSeconds: secs(0)}}, want: []string{"tolerations[0].effect"}},
		{name: "unknown effect", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, Effect: "Evict"}}, want: []string{"tolerations[0].effect"}, wantDetail: `supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`},
		{name: "malformed key", tols: []v1.Toleration{{Key: "bad key", Operator: v1.TolerationOpExists}}, want: []string{"tolerations[0].key"}},
		{name: "Equal with a malformed value", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpEqual, Value: "bad value"}}, want: []string{"tolerations[0].value"}},
		{name: "empty operator with a malformed value", tols: []v1.Toleration{{Key: "k", Value: strings.Repeat("v", 64)}}, want: []string{"tolerations[0].value"}},
		{name: "Lt without the option", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpLt, Value: "5"}}, want: []string{"tolerations[0].operator"}, wantDetail: "Options.ComparisonOperators"},
		{name: "Gt without the option", tols: []v1.Toleration{valid[0], {Key: "k", Operator: v1.TolerationOpGt, Value: "5"}}, want: []string{"tolerations[1].operator"}},
		{name: "Lt with the option", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpLt, Value: "5", Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(60)}}, opts: on},
		{name: "Gt with the option, negative", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpGt, Value: "-9223372036854775808"}}, opts: on},
		{name: "Gt with the option, zero", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpGt, Value: "0"}}, opts: on},
		{name: "Lt, not an integer", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpLt, Value: "abc"}}, opts: on, want: []string{"tolerations[0].value"}, wantDetail: "decimal integer"},
		{name: "Lt, empty value", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpLt}}, opts: on, want: []string{"tolerations[0].value"}},
		{name: "Lt, leading zero", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpLt, Value: "05"}}, opts: on, want: []string{"tolerations[0].value"}},
		{name: "Gt, plus sign", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpGt, Value: "+5"}}, opts: on, want: []string{"tolerations[0].value"}},
		{name: "Gt, minus zero", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpGt, Value: "-0"}}, opts: on, want: []string{"tolerations[0].value"}},
		{name: "Gt, beyond int64", tols: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpGt, Value: "9223372036854775808"}}, opts: on, want: []string{"tolerations[0].value"}},
		{
			name: "several problems, all reported",
			tols: []v1.Toleration{valid[0], {Operator: v1.TolerationOpEqual, TolerationSeconds: secs(1)}, {Key: "k", Operator: v1.TolerationOpExists, Value: "v", Effect: "Bad"}},
			opts: off,
			want: []string{"tolerations[1].operator", "tolerations[1].effect", "tolerations[2].value", "tolerations[2].effect"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkValidation(t, tolerations.ValidateTolerations(tc.tols, tc.opts), tc.want, tc.wantDetail)
		})
	}
}

func TestFieldError(t *testing.T) {
	fe := &tolerations.FieldError{Field: "tolerations[1].operator", Value: `"In"`, Detail: "bad"}
	want := `tolerations: tolerations[1].operator: invalid value "In": bad`
	assert.Equal(t, want, fe.Error(), "got %q, want %q", fe.Error(), want)
	assert.True(t, errors.Is(fe, tolerations.ErrInvalid), "got errors.Is false, want true")
	assert.Equal(t, tolerations.ErrInvalid, errors.Unwrap(fe), "got %v, want ErrInvalid", errors.Unwrap(fe))
	// Like every error of the package, ErrInvalid names it.
	assert.Equal(t, "tolerations: invalid", tolerations.ErrInvalid.Error(), "ErrInvalid: got %q, want %q", tolerations.ErrInvalid.Error(), "tolerations: invalid")

	// The value is quoted, so odd values stay readable.
	err := tolerations.ValidateTolerations([]v1.Toleration{{Key: "k", Operator: "a\nb"}}, tolerations.Options{})
	var got *tolerations.FieldError
	require.True(t, errors.As(err, &got), "got %v, want a *FieldError", err)
	assert.Equal(t, `"a\nb"`, got.Value, "got %s, want %s", got.Value, `"a\nb"`)
}
