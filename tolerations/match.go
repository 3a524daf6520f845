package tolerations

import (
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// NoExecuteTaints returns the taints of taints whose effect is NoExecute, in their order, or
// nil when there are none. When all are NoExecute it returns taints itself, which the caller
// must then not modify; it allocates only when some, but not all, are.
func NoExecuteTaints(taints []v1.Taint) []v1.Taint {
	switch n := countNoExecute(taints); n {
	case 0:
		return nil
	case len(taints):
		return taints
	default:
		out := make([]v1.Taint, 0, n)
		for i := range taints {
			if taints[i].Effect == v1.TaintEffectNoExecute {
				out = append(out, taints[i])
			}
		}
		return out
	}
}

func countNoExecute(taints []v1.Taint) int {
	n := 0
	for i := range taints {
		if taints[i].Effect == v1.TaintEffectNoExecute {
			n++
		}
	}
	return n
}

// Tolerates reports whether toleration tolerates taint, as [v1.Toleration.ToleratesTaint]
// does: an empty effect or key matches every effect or key; Equal or an empty operator
// requires equal values; Exists matches every value; Lt and Gt, only when
// [Options.ComparisonOperators] is set and [Options.Rules] is not [DeviceRules], compare
// the values as decimal integers in canonical form (taint value < or > toleration value),
// and a value that is not one never matches; any other operator never matches. A nil
// toleration or taint tolerates, and is tolerated by, nothing.
func Tolerates(toleration *v1.Toleration, taint *v1.Taint, opts Options) bool {
	if toleration == nil || taint == nil || !effectAndKeyMatch(toleration, taint) {
		return false
	}
	switch toleration.Operator {
	case "", v1.TolerationOpEqual:
		return toleration.Value == taint.Value
	case v1.TolerationOpExists:
		return true
	case v1.TolerationOpLt, v1.TolerationOpGt:
		if !opts.ComparisonOperators || opts.Rules == DeviceRules {
			return false
		}
		tol, ok1 := parseCanonicalInt(toleration.Value)
		val, ok2 := parseCanonicalInt(taint.Value)
		if toleration.Operator == v1.TolerationOpLt {
			return ok1 && ok2 && val < tol
		}
		return ok1 && ok2 && val > tol
	}
	return false
}

// effectAndKeyMatch is Tolerates' first test, small enough to inline, so that deciding
// passes over most tolerations without a call.
func effectAndKeyMatch(toleration *v1.Toleration, taint *v1.Taint) bool {
	return (toleration.Effect == "" || toleration.Effect == taint.Effect) &&
		(toleration.Key == "" || toleration.Key == taint.Key)
}

// parseCanonicalInt parses s as kube does (content.IsDecimalInteger, then
// strconv.ParseInt): a minus sign at most, then digits with no leading zero. It checks the
// form first, so that only a value beyond int64 allocates (ParseInt's error).
func parseCanonicalInt(s string) (int64, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || digits[0] == '0' && s != "0" || strings.ContainsFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// deciding returns the toleration in tolerations that decides how long taint is tolerated
// under opts.Rules ([NodeRules], [DeviceRules]), or nil when none tolerates it. It is the
// one per-taint step of Match, Deadline and ObservedDeadline.
func deciding(tolerations []v1.Toleration, taint *v1.Taint, opts Options) *v1.Toleration {
	var best *v1.Toleration
	for j := range tolerations {
		tol := &tolerations[j]
		if !effectAndKeyMatch(tol, taint) || !Tolerates(tol, taint, opts) {
			continue
		}
		if opts.Rules != DeviceRules || tol.TolerationSeconds == nil {
			return tol // the first under NodeRules; forever, wherever it stands, under DeviceRules
		}
		if best == nil || max(*tol.TolerationSeconds, 0) < max(*best.TolerationSeconds, 0) {
			best = tol
		}
	}
	return best
}

// Match returns, for each NoExecute taint of taints in order, the toleration that decides
// how long it is tolerated under opts.Rules ([NodeRules], [DeviceRules]); the same
// toleration may stand more than once, and taints of other effects are ignored. ok is false,
// and used nil, when a NoExecute taint has no such toleration, as in kube; with no NoExecute
// taint, ok is true and used empty. Under NodeRules the result depends on the order of
// tolerations (see the package documentation).
func Match(taints []v1.Taint, tolerations []v1.Toleration, opts Options) (used []v1.Toleration, ok bool) {
	used = make([]v1.Toleration, 0, countNoExecute(taints)) // none allocated without NoExecute taints
	for i := range taints {
		if taints[i].Effect != v1.TaintEffectNoExecute {
			continue
		}
		tol := deciding(tolerations, &taints[i], opts)
		if tol == nil {
			return nil, false
		}
		used = append(used, *tol)
	}
	return used, true
}
