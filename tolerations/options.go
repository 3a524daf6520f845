package tolerations

import "strconv"

// Options changes how tolerations match taints. The zero value matches as Kubernetes does
// for pods on nodes, with its default feature gates.
type Options struct {
	// ComparisonOperators enables the Lt and Gt operators (the TaintTolerationComparisonOperators
	// feature of Kubernetes, alpha and off by default there). When false, a toleration with
	// Lt or Gt tolerates no taint. Under [DeviceRules] Lt and Gt never match, whatever this
	// says: device tolerations have no such operators.
	ComparisonOperators bool
	// Rules chooses which tolerations count for a taint and how their times combine. The
	// zero value is [NodeRules].
	Rules Rules
}

// Rules says whose rules decide which tolerations count for a taint: kube's taint eviction
// for pods on nodes, or kube's eviction for pods whose claims use tainted devices. The zero
// value is [NodeRules]; a value that is neither constant works as NodeRules.
//
// [DeviceRules] differ from kube's device controller (v1.37) in one way: a toleration with
// an empty effect counts, as the API says (an empty effect matches every effect) and as the
// scheduler's allocator and the node rules read it. Kube's controller counts only
// tolerations whose effect is exactly NoExecute, so it evicts at once a pod whose claim
// tolerates {operator: Exists}, which the allocator let onto the tainted device.
type Rules uint8

const (
	// NodeRules are the rules of kube's taint eviction controller for nodes: for each
	// NoExecute taint, the first toleration in list order that tolerates it decides, whatever
	// the toleration's effect, even when a later one would tolerate the taint for longer.
	NodeRules Rules = iota
	// DeviceRules are the rules of kube's device taint eviction controller (claimEvictionTime
	// in pkg/controller/devicetainteviction): for each NoExecute taint, the tolerations that
	// tolerate it (of effect NoExecute, or empty: kube counts only NoExecute, see Rules)
	// count, in any order. If one of them has nil tolerationSeconds the taint is tolerated
	// forever; otherwise the taint's time is its TimeAdded plus the smallest
	// tolerationSeconds of them (<= 0 counting as 0); with none, the taint evicts at its
	// TimeAdded. Lt and Gt never match.
	DeviceRules
)

// String returns the rules' name: "NodeRules", "DeviceRules", or "Rules(n)" for any other
// value.
func (r Rules) String() string {
	switch r {
	case NodeRules:
		return "NodeRules"
	case DeviceRules:
		return "DeviceRules"
	}
	return "Rules(" + strconv.Itoa(int(r)) + ")"
}
