package eviction

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

func seconds(s int64) *int64 { return &s }

// TestTolerationsEqual holds tolerationsEqual to apiequality.Semantic.DeepEqual, which
// PodUpdated's change filter used, on the cases that differ in one field each.
func TestTolerationsEqual(t *testing.T) {
	base := v1.Toleration{Key: "k", Operator: v1.TolerationOpEqual, Value: "v", Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds(300)}
	with := func(change func(*v1.Toleration)) []v1.Toleration {
		tol := base
		tol.TolerationSeconds = seconds(*base.TolerationSeconds) // another pointer, same number
		change(&tol)
		return []v1.Toleration{{Key: "first", Operator: v1.TolerationOpExists}, tol}
	}
	same := []v1.Toleration{{Key: "first", Operator: v1.TolerationOpExists}, base}
	tests := []struct {
		name string
		a, b []v1.Toleration
		want bool
	}{
		{"nil and nil", nil, nil, true},
		{"nil and empty", nil, []v1.Toleration{}, true},
		{"nil and one", nil, same[:1], false},
		{"same, other pointers to the seconds", same, with(func(*v1.Toleration) {}), true},
		{"key", same, with(func(t *v1.Toleration) { t.Key = "other" }), false},
		{"operator", same, with(func(t *v1.Toleration) { t.Operator = v1.TolerationOpExists }), false},
		{"value", same, with(func(t *v1.Toleration) { t.Value = "w" }), false},
		{"effect", same, with(func(t *v1.Toleration) { t.Effect = v1.TaintEffectNoSchedule }), false},
		{"seconds", same, with(func(t *v1.Toleration) { *t.TolerationSeconds = 301 }), false},
		{"seconds against none", same, with(func(t *v1.Toleration) { t.TolerationSeconds = nil }), false},
		{"none against none", with(func(t *v1.Toleration) { t.TolerationSeconds = nil }), with(func(t *v1.Toleration) { t.TolerationSeconds = nil }), true},
		{"order", same, []v1.Toleration{same[1], same[0]}, false},
		{"one more", same, append(with(func(*v1.Toleration) {}), base), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if want := apiequality.Semantic.DeepEqual(tc.a, tc.b); want != tc.want {
				t.Fatalf("the case is wrong: Semantic.DeepEqual says %v, the case %v", want, tc.want)
			}
			for _, order := range [][2][]v1.Toleration{{tc.a, tc.b}, {tc.b, tc.a}} {
				if got := tolerationsEqual(order[0], order[1]); got != tc.want {
					t.Errorf("tolerationsEqual(%v, %v): got %v, want %v", order[0], order[1], got, tc.want)
				}
			}
		})
	}
}

// FuzzTolerationsEqual compares tolerationsEqual with apiequality.Semantic.DeepEqual on
// one toleration against another, of arbitrary fields.
func FuzzTolerationsEqual(f *testing.F) {
	f.Add("k", "Equal", "v", "NoExecute", int64(300), true, "k", "Equal", "v", "NoExecute", int64(300), true)
	f.Add("k", "Exists", "", "", int64(0), false, "k", "Exists", "", "", int64(0), true)
	f.Add("k", "Exists", "", "", int64(1), true, "k", "Exists", "", "", int64(2), true)
	f.Fuzz(func(t *testing.T, k1, op1, v1s, e1 string, s1 int64, has1 bool, k2, op2, v2s, e2 string, s2 int64, has2 bool) {
		tol := func(k, op, v, e string, s int64, has bool) []v1.Toleration {
			tl := v1.Toleration{Key: k, Operator: v1.TolerationOperator(op), Value: v, Effect: v1.TaintEffect(e)}
			if has {
				tl.TolerationSeconds = seconds(s)
			}
			return []v1.Toleration{tl}
		}
		a, b := tol(k1, op1, v1s, e1, s1, has1), tol(k2, op2, v2s, e2, s2, has2)
		if got, want := tolerationsEqual(a, b), apiequality.Semantic.DeepEqual(a, b); got != want {
			t.Fatalf("tolerationsEqual(%v, %v): got %v, want %v (Semantic.DeepEqual)", a, b, got, want)
		}
	})
}
