// Package whatif answers "what would happen if": it runs the engine itself in dry run, on
// a fake clock stepped straight to each deadline, over a cluster as it is and as a
// hypothetical change would make it, and reports which pods go at once, which later, which
// a budget delays or holds, and which stay.
//
//	res, err := whatif.Nodes(ctx, whatif.Cluster{Nodes: nodes, Pods: whatif.NewIndex(pods)},
//		whatif.Change{"node-1": {{Key: "example.com/down", Effect: v1.TaintEffectNoExecute}}},
//		whatif.Options{Start: now})
//	...
//	fmt.Println(res.Summary()) // evicts 1 pod now (1 namespace), 1 more within 5m0s; ...
//
// # The engine's verdicts
//
// No rule is implemented twice: the verdicts and the times are the engine's
// ([engine.Engine], through an [eviction.Manager] for nodes; see [Simulate]). Only the
// explanation of each, which toleration decides which taint and from when it counts
// ([Why]), is computed apart, with package tolerations.
//
// # The what-ifs
//
// [Nodes] is the what-if of node taints: given every node, the pods (an informer cache, or
// an [Index] of a list) and the taints some nodes would carry ([Change]), it simulates the
// cluster as the change makes it and, when a changed node already carries NoExecute
// taints, as it is, so that each pod's fate before and after is known. [Result.Summary]
// counts what the change does. [Holders] asks the same of holders of any kind (DRA
// devices, for one), and [Simulate] runs any engine the caller builds.
//
// It is the library behind the kubectl-taintevict plugin (examples/kubectl-taintevict) and
// the admission webhook of the drop-in controller (examples/controller), which warns when a
// taint is about to evict.
//
// # Clock, goroutines, errors
//
// The package never reads a clock: the caller gives the start. It starts goroutines only
// inside a call, and every one has ended when the call returns. Errors start with
// "whatif:".
package whatif
