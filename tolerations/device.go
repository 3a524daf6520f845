package tolerations

import (
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// deviceOperatorPrefix marks a device toleration operator that has no meaning for devices
// (anything but "", Equal and Exists, Lt and Gt included). The result is no operator of the
// Kubernetes API, so [Tolerates] never matches it under any [Options], as
// resourceclaim.ToleratesTaint never matches the original; the original stays readable.
const deviceOperatorPrefix = "device:"

// DeviceTaints returns taints as [v1.Taint] values that [Deadline], [Match] and [Tolerates]
// treat as kube's device rules do, when the tolerations come from [DeviceTolerations] and
// [Options.Rules] is [DeviceRules]. Key, Value and TimeAdded are copied (TimeAdded shares
// the pointer) and the effect keeps its string: NoExecute stays NoExecute, NoSchedule stays
// NoSchedule, and None or an unknown effect is never NoExecute, so it never evicts, as the
// API requires of consumers. It returns nil for a nil slice and allocates one slice
// otherwise; it is safe for concurrent use.
func DeviceTaints(taints []resourcev1.DeviceTaint) []v1.Taint {
	if taints == nil {
		return nil
	}
	out := make([]v1.Taint, len(taints))
	for i := range taints {
		out[i] = v1.Taint{
			Key:       taints[i].Key,
			Value:     taints[i].Value,
			Effect:    v1.TaintEffect(taints[i].Effect),
			TimeAdded: taints[i].TimeAdded,
		}
	}
	return out
}

// DeviceTolerations returns tolerations as [v1.Toleration] values that [Deadline], [Match]
// and [Tolerates] treat as kube's device rules do, when the taints come from [DeviceTaints]
// and [Options.Rules] is [DeviceRules]. Key, Value, Effect (by its string) and
// TolerationSeconds (sharing the pointer) are copied. The operators "" and Equal stay as
// they are and Exists stays Exists; any other operator op, Lt and Gt included, becomes
// "device:"+op, which is no operator of the API and which Tolerates never matches, whatever
// the Options, as [k8s.io/dynamic-resource-allocation/resourceclaim.ToleratesTaint] never matches op. It returns nil for a nil
// slice and allocates otherwise; it is safe for concurrent use.
func DeviceTolerations(tolerations []resourcev1.DeviceToleration) []v1.Toleration {
	if tolerations == nil {
		return nil
	}
	out := make([]v1.Toleration, len(tolerations))
	for i := range tolerations {
		tol := &tolerations[i]
		op := v1.TolerationOperator(tol.Operator)
		switch tol.Operator {
		case "", resourcev1.DeviceTolerationOpEqual, resourcev1.DeviceTolerationOpExists:
		default:
			op = deviceOperatorPrefix + op
		}
		out[i] = v1.Toleration{
			Key:               tol.Key,
			Operator:          op,
			Value:             tol.Value,
			Effect:            v1.TaintEffect(tol.Effect),
			TolerationSeconds: tol.TolerationSeconds,
		}
	}
	return out
}

// ToleratesDevice reports whether toleration tolerates taint, exactly as
// [k8s.io/dynamic-resource-allocation/resourceclaim.ToleratesTaint] does: an empty
// toleration effect matches every effect, otherwise the effects must be equal; an empty key
// matches every key, otherwise the keys must be equal; "" and Equal require equal values;
// Exists matches every value; any other operator never matches. Like ToleratesTaint it does
// not read the effect's meaning: a caller deciding evictions must look only at NoExecute
// taints, as [Deadline] does under [DeviceRules]. Nil pointers tolerate, and are tolerated by,
// nothing. It does not allocate and is safe for concurrent use.
func ToleratesDevice(toleration *resourcev1.DeviceToleration, taint *resourcev1.DeviceTaint) bool {
	if toleration == nil || taint == nil {
		return false
	}
	if toleration.Effect != "" && toleration.Effect != taint.Effect {
		return false
	}
	if toleration.Key != "" && toleration.Key != taint.Key {
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
