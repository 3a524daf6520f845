// Package whatif answers "what would happen if": it runs the engine itself
// ([github.com/taintevict/taintevict/eviction/engine], through an
// [github.com/taintevict/taintevict/eviction.Manager] for nodes) in dry run, on a fake
// clock stepped straight to each deadline, over a cluster as it is and as a hypothetical
// change would make it, and reports what the engine did: which pods go at once, which at
// a later time, which a budget delays or holds, and which stay. No rule is implemented
// twice: the verdicts and the times are the engine's ([Simulate]); only the explanation of
// each (which toleration decides which taint, and from when it counts: [Why]) is computed
// apart, with the tolerations package.
//
// [Nodes] is the what-if of node taints: given every node, the pods (an informer cache, or
// an [Index] of a list) and the taints some nodes would carry ([Change]), it simulates the
// cluster as the change makes it, and, when a changed node already carries NoExecute
// taints, as it is, so that each pod's fate before and after is known. [Result.Summary]
// counts what the change does; [Result.RefusePDBs] adds what PodDisruptionBudgets would
// refuse to a controller in evict mode. [Simulate] runs any engine the caller builds (pods
// on DRA devices, through the clientgo/device Source, for one).
//
// It is the library behind the kubectl-taintevict plugin (examples/kubectl-taintevict) and
// the admission webhook of the drop-in controller (examples/controller), which warns when a
// taint is about to evict.
//
// The package never reads a clock: the caller gives the start. It starts goroutines only
// inside a call, and every one has ended when the call returns. Errors start with
// "whatif:".
package whatif
