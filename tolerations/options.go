package tolerations

import "strconv"

// Options changes how tolerations match taints. The zero value matches as Kubernetes does
// for pods on nodes, with its default feature gates.
type Options struct {
	// ComparisonOperators enables the Lt and Gt operators (Kubernetes'
	// TaintTolerationComparisonOperators feature, alpha and off by default there). When
	// false, and always under [DeviceRules], a toleration with Lt or Gt tolerates nothing.
	ComparisonOperators bool
	// Rules chooses which tolerations count for a taint and how their times combine. The
	// zero value is [NodeRules].
	Rules Rules
}

// Rules says whose rules decide which tolerations count for a taint. The zero value is
// [NodeRules]; a value that is neither constant works as NodeRules.
type Rules uint8

const (
	// NodeRules are the rules of kube's taint eviction controller for nodes: for each
	// NoExecute taint, the first toleration in list order that tolerates it decides,
	// whatever its effect, even when a later one would tolerate the taint for longer.
	NodeRules Rules = iota
	// DeviceRules are the rules of kube's device taint eviction controller
	// (claimEvictionTime in pkg/controller/devicetainteviction): for each NoExecute taint,
	// every toleration that tolerates it counts, in any order. If one has nil
	// tolerationSeconds the taint is tolerated forever; otherwise its time is its TimeAdded
	// plus their smallest tolerationSeconds (<= 0 counting as 0; the first of equals
	// decides); with none, the taint evicts at its TimeAdded. Lt and Gt never match.
	//
	// They differ from kube's controller (v1.37) in one way: a toleration with an empty
	// effect counts, as the API says (an empty effect matches every effect) and as the
	// scheduler's allocator reads it. Kube's controller counts only tolerations of effect
	// NoExecute, so it evicts at once a pod whose claim tolerates {operator: Exists}, which
	// the allocator let onto the tainted device.
	DeviceRules
)

// String returns "NodeRules", "DeviceRules", or "Rules(n)" for any other value.
func (r Rules) String() string {
	switch r {
	case NodeRules:
		return "NodeRules"
	case DeviceRules:
		return "DeviceRules"
	}
	return "Rules(" + strconv.Itoa(int(r)) + ")"
}
