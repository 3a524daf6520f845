// Package eviction evicts pods from nodes with NoExecute taints when their tolerations run
// out: kube-controller-manager's taint eviction controller as a library, with its known
// bugs fixed, budgets against mass eviction, and no informer, client or real clock built
// in. A [Manager] takes node and pod updates from your informers' handlers and calls your
// [Deleter] when a pod's time is up.
//
//	m, err := eviction.New(deleter, cache, eviction.Options{}) // your Deleter; a Cache over the informers' stores
//	if err != nil { ... }
//	go m.Run(ctx)           // until ctx is done; waits for what it started
//	m.NodeUpdated(old, new) // from the informers' handlers: old nil on add, new nil on delete
//	m.PodUpdated(old, new)
//
// Package [github.com/taintevict/taintevict/clientgo] wires it to client-go. The Manager is
// the pods-on-nodes instantiation of [github.com/taintevict/taintevict/eviction/engine],
// whose [Observer], [Options], [PodRef] and reasons it shares.
//
// # Semantics
//
// Kube's, with its known bugs fixed:
//
//   - A pod that does not tolerate a NoExecute taint of its node is evicted at once, one
//     that tolerates it forever never, others at the deadline of [tolerations.Deadline],
//     counted from the taint's TimeAdded, or from when it was first seen if that is missing
//     or in the future ([FromTimeAdded]), so a restart keeps the deadlines (kube restarts
//     them).
//   - A change of taints, tolerations or node moves the deadline earlier or later (kube
//     keeps the first); untainting, deleting the node or the pod cancels (kube leaves a
//     deleted node's evictions).
//   - Finished or terminating pods are never deleted again.
//   - Right before deleting, the Manager rechecks pod and node in the [Cache], and the
//     Deleter gets the UID, so a stale schedule never deletes a pod re-created under its
//     name.
//   - A failed delete is retried with backoff, never dropped; each call has a timeout.
//
// # Budgets
//
// The fields of [Options] that bound mass eviction (rate limits, [Brake], [InFlight],
// windows per namespace and owner, [LoopDamping], [Confirm]) are each off by default. A due
// eviction that waits stays in [Manager.Pending] with its reason, and the [Observer]'s
// Delayed is told when that reason changes; none is dropped.
//
// # Bad input
//
// Nil objects are ignored. A pod with no node, or on a node not seen yet, is not
// scheduled. A toleration the API server would reject tolerates nothing; a negative
// tolerationSeconds means now, as in Kubernetes. A failing Cache or Deleter is retried.
// Nothing panics.
package eviction
