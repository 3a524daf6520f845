// Package whatif answers "what would happen if": it runs the engine itself, with an
// Actuator that acts on nothing, on a fake clock stepped straight to each deadline, over a
// cluster as it is and as a hypothetical change would make it, and reports which pods go at
// once, which later, which a budget delays or holds, and which stay.
//
//	res, err := whatif.Nodes(ctx, whatif.Cluster{Nodes: nodes, Pods: whatif.NewIndex(pods)},
//		whatif.Change{"node-1": {{Key: "example.com/down", Effect: v1.TaintEffectNoExecute}}},
//		whatif.Options{Start: now})
//	...
//	fmt.Println(res.Summary()) // evicts 1 pod now (1 namespace), 1 more within 5m0s; ...
//
// No rule is implemented twice: the verdicts and the times are the engine's, every budget
// included ([Simulate]); only the explanation, which toleration decides which taint and
// from when it counts ([Why]), is computed apart, with package tolerations. Where the
// engine's times depend on the world, the simulation takes a side, documented where it
// does: an Actuator call answers at once, a target acted on is gone at the end of its
// grace period ([Departing]), and no target is re-created.
//
// [Nodes] is the what-if of node taints ([Change]) over every node and the pods (an
// informer cache, or an [Index] of a list), with each pod's fate before and after;
// [Result.Summary] counts what the change does. [Holders] asks the same of holders of any
// kind (DRA devices, for one). The kubectl-taintevict plugin and the drop-in controller's
// admission webhook are built on it.
//
// The package never reads a clock: the caller gives the start. It starts goroutines only
// inside a call, and every one has ended when the call returns. Errors start with
// "whatif:".
package whatif
