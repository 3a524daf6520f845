// Package eviction evicts pods from nodes with NoExecute taints when their tolerations run
// out: the behaviour of kube-controller-manager's taint eviction controller, as a library,
// without informers, clients or real time built in.
//
// A [Manager] takes node and pod updates from the caller ([Manager.NodeUpdated],
// [Manager.PodUpdated], with kube's (old, new) convention: old nil for an add, new nil for a
// delete), keeps one eviction record per pod, and calls a [Deleter] when a pod's time is
// up. The caller gives it a [Cache] over its informers' stores, and receives every decision
// through an [Observer], to turn into Events and metrics.
// [Manager.WaitIdle] waits until everything given to the Manager has been done, for tests
// and simulations on a fake clock.
//
// The Manager is one instantiation of the generic engine,
// [github.com/taintevict/taintevict/eviction/engine]: holders (here nodes) carry taints,
// targets (here pods) are bound to holders with tolerations, and an actuator (here the
// Deleter) acts on a target whose time is up. Pods on tainted devices, workloads on tainted
// clusters and other carriers use the engine directly. The Manager's contract is the
// engine's: [Observer], [Options], [PodRef] and the reasons are the engine's types, and
// [PodActuator] lets an engine of pods reuse a Deleter written for the Manager.
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
//     an open eviction of such a pod is reported as skipped, and a pod that had none is
//     not reported at all.
//   - Right before deleting, the Manager rechecks the pod and node in the Cache: the same
//     UID, still due. It decides from what it finds as an update would, and reports the same
//     (a pod due later is moved, one no longer due is cancelled), so the report does not
//     depend on whether the recheck or the update saw a change first. A stale schedule
//     never deletes a pod re-created under the same name; the Deleter receives the UID to
//     send as a precondition.
//   - A failed delete is retried with backoff until it succeeds, the pod is gone, or the
//     eviction is cancelled; it is never dropped. Each Deleter call is bounded by a timeout.
//
// # Budgets
//
// Kube's controller evicts every due pod as fast as it can, and leaves the safety against
// mass eviction to the node lifecycle controller, which slows down tainting in an unhealthy
// zone. Whoever taints nodes by other means (a health checker, a maintenance operator, a
// failover, a bug) gets no such protection. Options gives it, off by default:
//
//   - [Options.RateLimit]: at most so many evictions a second, with a burst (a token bucket
//     on the Manager's clock);
//   - [Options.TaintRateLimits]: the same per taint key, for the evictions that taint
//     causes; a pod due because of several taints waits for the slowest;
//   - [Options.Brake]: when more than a fraction of the nodes, of the cluster or of one zone,
//     carry a NoExecute taint with the same key, or at least a floor of them, the evictions
//     it causes pause, until fewer do; a zone all of whose nodes carry it is fully
//     disrupted, and its evictions pause, or go at a rate of their own
//     ([Options.Brake].FullDisruption), as kube's node lifecycle controller does;
//   - [Options.InFlight]: at most so many evictions (or such a share of those due) whose
//     pods are not gone yet: a pod that is Terminating counts until it is gone;
//   - [Options.NamespaceLimit] and [Options.OwnerLimit]: at most so many evictions of a
//     namespace, or of a workload ([PodOwner]: a ReplicaSet's Deployment, a StatefulSet),
//     within any span of the given length;
//   - [Options.LoopDamping]: a pod that a workload's controller re-creates on a tainted
//     node waits a backoff that doubles with each eviction in a row (kubernetes#89068);
//   - [Options.Confirm]: a taint key that would evict more than a fraction of all pods at
//     once is held until an operator confirms it on the node with the
//     [ConfirmAnnotation], or until it would evict fewer (kubernetes#141422 for devices,
//     karmada#5150 for clusters). The Manager counts what each key would evict from the
//     updates it is given, before the engine hears of them.
//
// An eviction that is due and waits stays in [Manager.Pending] with the time it fell due
// and why it waits, and [Observer.Delayed] is told when that reason changes. Cancellation
// wins: an eviction cancelled while it waits never runs, and its token goes to the next
// one. Evictions that fall due while paused wait, none is dropped; when the brake releases,
// they go under the rate limits, earliest due first. A new Manager counts the nodes it is
// fed, so a restart keeps the brake; its buckets start full, so a restart may allow one
// burst.
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
