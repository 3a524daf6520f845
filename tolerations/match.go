package tolerations

import (
	v1 "k8s.io/api/core/v1"
)

// NoExecuteTaints returns the taints of taints whose effect is NoExecute, in their order.
// It returns nil when there are none, and it allocates only when some, but not all, taints
// are NoExecute: when all are, it returns taints itself, which the caller must then not
// modify.
func NoExecuteTaints(taints []v1.Taint) []v1.Taint {
	n := 0
	for i := range taints {
		if taints[i].Effect == v1.TaintEffectNoExecute {
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case len(taints):
		return taints
	}
	out := make([]v1.Taint, 0, n)
	for i := range taints {
		if taints[i].Effect == v1.TaintEffectNoExecute {
			out = append(out, taints[i])
		}
	}
	return out
}

// Tolerates reports whether toleration tolerates taint. It agrees with
// [v1.Toleration.ToleratesTaint]:
//
//   - an empty toleration effect matches every effect, otherwise the effects must be equal;
//   - an empty toleration key matches every key, otherwise the keys must be equal;
//   - the operator Equal, or an empty operator, requires equal values;
//   - Exists matches every value;
//   - Lt and Gt, when [Options.ComparisonOperators] is set and [Options.Rules] is not
//     [DeviceRules], compare the values as decimal integers in canonical form (taint value <
//     or > toleration value); a value that is not such an integer never matches;
//   - any other operator never matches.
//
// A nil toleration or taint tolerates, and is tolerated by, nothing.
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
		tol, ok := parseCanonicalInt(toleration.Value)
		if !ok {
			return false
		}
		val, ok := parseCanonicalInt(taint.Value)
		if !ok {
			return false
		}
		if toleration.Operator == v1.TolerationOpLt {
			return val < tol
		}
		return val > tol
	default:
		return false
	}
}

// effectAndKeyMatch reports whether toleration passes the first two tests of Tolerates:
// its effect is empty or the taint's, and its key is empty or the taint's. It is small
// enough to inline, so that deciding skips most tolerations without calling Tolerates.
func effectAndKeyMatch(toleration *v1.Toleration, taint *v1.Taint) bool {
	return (toleration.Effect == "" || toleration.Effect == taint.Effect) &&
		(toleration.Key == "" || toleration.Key == taint.Key)
}

// parseCanonicalInt parses s as kube's comparison operators do: a decimal int64 with an
// optional minus sign and no leading zeros, plus sign or other base. It does not allocate.
func parseCanonicalInt(s string) (int64, bool) {
	neg := false
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		neg = true
		digits = digits[1:]
	}
	if len(digits) == 0 || (digits[0] == '0' && (len(digits) > 1 || neg)) {
		return 0, false
	}
	// Accumulate as a negative number so that math.MinInt64 parses.
	var n int64
	const minInt64 = -1 << 63
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n < minInt64/10 || n*10 < minInt64+d {
			return 0, false
		}
		n = n*10 - d
	}
	if neg {
		return n, true
	}
	if n == minInt64 {
		return 0, false
	}
	return -n, true
}

// deciding returns the toleration in tolerations that decides how long taint is tolerated
// under opts.Rules, or nil when none counts:
//
//   - NodeRules: the first toleration, in list order, that tolerates taint;
//   - DeviceRules: among the tolerations that tolerate taint (their effect is NoExecute or
//     empty), the first with nil tolerationSeconds (forever) if any, otherwise the first with
//     the smallest tolerationSeconds, values <= 0 counting as 0. Kube's device controller
//     (v1.37) counts only those of effect NoExecute: an empty effect matches every effect,
//     as the API says and as the node rules and the scheduler's allocator read it, so a
//     toleration without one keeps the pod, here, where kube evicts it.
//
// It is the one per-taint step of Match, Deadline and ObservedDeadline.
func deciding(tolerations []v1.Toleration, taint *v1.Taint, opts Options) *v1.Toleration {
	var best *v1.Toleration
	for j := range tolerations {
		tol := &tolerations[j]
		if !effectAndKeyMatch(tol, taint) || !Tolerates(tol, taint, opts) {
			continue
		}
		if opts.Rules != DeviceRules {
			return tol
		}
		if tol.TolerationSeconds == nil {
			return tol // forever wins, wherever it stands
		}
		if best == nil || max(*tol.TolerationSeconds, 0) < max(*best.TolerationSeconds, 0) {
			best = tol
		}
	}
	return best
}

// Match pairs every NoExecute taint in taints with the toleration that decides how long it
// is tolerated. Under [NodeRules] that is the first toleration, in list order, that
// tolerates it, as kube-controller-manager does, and the result depends on the order of
// tolerations (see the package documentation). Under [DeviceRules] it is, among the
// tolerations that tolerate it (of effect NoExecute or empty), one with nil
// tolerationSeconds if any, otherwise one with the smallest tolerationSeconds (the first in
// list order of either), so that the order does not matter. Taints of other effects are ignored.
//
// It returns ok true and, for each NoExecute taint in order, the toleration that decides it
// (the same toleration may stand more than once). When there is no NoExecute taint it returns
// ok true and no tolerations. When any NoExecute taint has no such toleration it returns ok
// false and nil, as kube does.
func Match(taints []v1.Taint, tolerations []v1.Toleration, opts Options) (used []v1.Toleration, ok bool) {
	n := 0
	for i := range taints {
		if taints[i].Effect == v1.TaintEffectNoExecute {
			n++
		}
	}
	used = make([]v1.Toleration, 0, n) // one allocation; none when there is no NoExecute taint
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
