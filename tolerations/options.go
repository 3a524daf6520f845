package tolerations

// Options changes how tolerations match taints. The zero value matches as Kubernetes does
// with its default feature gates.
type Options struct {
	// ComparisonOperators enables the Lt and Gt operators (the TaintTolerationComparisonOperators
	// feature of Kubernetes, alpha and off by default there). When false, a toleration with
	// Lt or Gt tolerates no taint.
	ComparisonOperators bool
}
