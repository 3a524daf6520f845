package tolerations

import (
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// deviceOperatorPrefix marks a device toleration operator other than "", Equal and Exists:
// the result is no operator of the API, so [Tolerates] never matches it, as
// resourceclaim.ToleratesTaint never matches the original, which stays readable.
const deviceOperatorPrefix = "device:"

// DeviceTaints returns taints as [v1.Taint] values that [Deadline], [Match] and [Tolerates]
// treat as kube's device rules do, with tolerations from [DeviceTolerations] and
// [DeviceRules]. Key, Value, the effect's string and TimeAdded (the pointer) are copied: an
// effect other than NoExecute, None included, never evicts, as the API requires. It returns
// nil for a nil slice and allocates one slice otherwise.
func DeviceTaints(taints []resourcev1.DeviceTaint) []v1.Taint {
	if taints == nil {
		return nil
	}
	out := make([]v1.Taint, len(taints))
	for i, t := range taints {
		out[i] = v1.Taint{Key: t.Key, Value: t.Value, Effect: v1.TaintEffect(t.Effect), TimeAdded: t.TimeAdded}
	}
	return out
}

// DeviceTolerations returns tolerations as [v1.Toleration] values that [Deadline], [Match]
// and [Tolerates] treat as kube's device rules do, with taints from [DeviceTaints] and
// [DeviceRules]. Key, Value, the effect's string and TolerationSeconds (the pointer) are
// copied; the operators "", Equal and Exists too, and any other op, Lt and Gt included,
// becomes "device:"+op, which Tolerates never matches, as
// [k8s.io/dynamic-resource-allocation/resourceclaim.ToleratesTaint] never matches op. It
// returns nil for a nil slice and allocates otherwise.
func DeviceTolerations(tolerations []resourcev1.DeviceToleration) []v1.Toleration {
	if tolerations == nil {
		return nil
	}
	out := make([]v1.Toleration, len(tolerations))
	for i, t := range tolerations {
		op := v1.TolerationOperator(t.Operator)
		switch t.Operator {
		case "", resourcev1.DeviceTolerationOpEqual, resourcev1.DeviceTolerationOpExists:
		default:
			op = deviceOperatorPrefix + op
		}
		out[i] = v1.Toleration{Key: t.Key, Operator: op, Value: t.Value, Effect: v1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds}
	}
	return out
}

// ToleratesDevice reports whether toleration tolerates taint, exactly as
// [k8s.io/dynamic-resource-allocation/resourceclaim.ToleratesTaint] does: as [Tolerates],
// with "", Equal and Exists the only operators. Like it, it does not read the effect's
// meaning: a caller deciding evictions looks only at NoExecute taints, as [Deadline] does.
// Nil pointers tolerate, and are tolerated by, nothing. It does not allocate.
func ToleratesDevice(toleration *resourcev1.DeviceToleration, taint *resourcev1.DeviceTaint) bool {
	if toleration == nil || taint == nil ||
		toleration.Effect != "" && toleration.Effect != taint.Effect ||
		toleration.Key != "" && toleration.Key != taint.Key {
		return false
	}
	switch toleration.Operator {
	case "", resourcev1.DeviceTolerationOpEqual:
		return toleration.Value == taint.Value
	case resourcev1.DeviceTolerationOpExists:
		return true
	}
	return false
}
