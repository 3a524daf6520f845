// Package eviction evicts pods from nodes with NoExecute taints when their tolerations run
// out: the behaviour of kube-controller-manager's taint eviction controller, as a library,
// without informers, clients or real time built in.
//
// A [Manager] takes node and pod updates from the caller ([Manager.NodeUpdated],
// [Manager.PodUpdated], with kube's (old, new) convention: old nil for an add, new nil for a
// delete), keeps one deadline per pod in a [github.com/taintevict/taintevict/timedqueue],
// and calls a [Deleter] when a pod's time is up. The caller gives it a [Cache] over its
// informers' stores, and receives every decision through an [Observer], to turn into Events
// and metrics.
// [Manager.WaitIdle] waits until everything given to the Manager has been done, for tests
// and simulations on a fake clock.
//
// # Semantics
//
// Kube's, with its known bugs fixed:
//
//   - A pod on a node with no NoExecute taint is never scheduled; when all of a node's
//     taints are removed, its pods' pending evictions are cancelled.
//   - A pod that does not tolerate a NoExecute taint of its node is evicted at once; one that
//     tolerates every taint forever is never evicted; otherwise it is evicted at the deadline
//     [tolerations.Deadline] gives: a taint's countdown starts at the earlier of its
//     TimeAdded and the time the taint was first seen on that node (see [FromTimeAdded]),
//     so a restarted Manager evicts at the same times (kube restarts every countdown), and
//     a clock that runs ahead where the taint was added never holds an eviction back.
//   - A change of taints, tolerations or node recomputes the deadline, and the schedule
//     follows it earlier or later (kube keeps the first schedule).
//   - A deleted node cancels its pods' pending evictions (kube leaves them); so does a
//     deleted pod.
//   - Pods that have finished (Succeeded, Failed) or are being deleted are not deleted again;
//     they are reported as skipped.
//   - Right before deleting, the Manager rechecks the pod and node in the Cache: the same
//     UID, on the same node, still due. A stale schedule never deletes a pod re-created under
//     the same name; the Deleter receives the UID to send as a precondition.
//   - A failed delete is retried with backoff until it succeeds, the pod is gone, or the
//     eviction is cancelled; it is never dropped. Each Deleter call is bounded by a timeout.
//
// # Bad input
//
// Nil objects passed to NodeUpdated or PodUpdated are ignored. A pod with no node is not
// scheduled (and a pending eviction of it is cancelled). A pod on a node the Manager has not
// seen is not scheduled until the node's update arrives. Tolerations are matched as
// [tolerations.Tolerates] does: one the API server would reject (an unknown operator, say)
// tolerates nothing, and a negative tolerationSeconds means evict now, as in Kubernetes.
// Nothing panics; a failing Cache or Deleter is retried.
package eviction
