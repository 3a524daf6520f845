// Package engine is the core of taintevict: timed, toleration-based eviction for anything
// that carries taints and anything bound to it, with no Kubernetes client, informer or real
// clock built in. [github.com/taintevict/taintevict/eviction.Manager], which evicts pods
// from tainted nodes, is one instantiation of it; pods on tainted DRA devices, workloads on
// tainted clusters and bindings on tainted member clusters are others.
//
// # The model
//
// Holders carry taints: a node, a device, a cluster. A [Holder] has a name, its taints (the
// Kubernetes v1.Taint; device taints convert with tolerations.DeviceTaints) and a group (a
// node's zone, a device's pool) that the brake counts apart.
//
// Targets are what gets evicted: a pod, a workload, a binding of a workload to clusters. A
// target is bound to one or more holders, each [Binding] with its own tolerations: a pod
// tolerates its node with spec.tolerations; a pod that uses two devices tolerates each with
// the tolerations of the allocation that gave it that device. A binding is due when a
// NoExecute taint of its holder is not tolerated, or when the toleration runs out (see
// [github.com/taintevict/taintevict/tolerations.Deadline]); the target is due at the
// earliest deadline over its bindings, and the holder of that binding is the one named in
// the [Ref] of its eviction.
//
// The [Actuator] acts on a target when it is due, by reference, with the UID that was due:
// it may delete it, evict it through the Eviction API, migrate it, or move it elsewhere.
//
// The caller owns the informers. It implements a [Source] over their stores (how to look up
// a target or a holder, which targets are bound to a holder, and how to read a target
// object), feeds the [Engine] updates ([Engine.HolderUpdated], [Engine.TargetUpdated] and
// the deletions), and runs it ([Engine.Run]). Decisions are level-triggered: an update says
// that something changed, and the Engine reads the current state from the Source, so
// updates that come late, out of order or merged lose nothing.
//
// # Guarantees
//
// Every instantiation gets the same ones:
//
//   - A taint's countdown starts at its TimeAdded, or when the Engine first saw it on that
//     holder if TimeAdded is missing or in the future (and stays pinned there), so a
//     restarted Engine or a new leader acts at the same deadlines ([FromTimeAdded]; kube's
//     own rule is [FromObservation]).
//   - A change of taints, tolerations or bindings decides again, and the schedule follows
//     the deadline earlier or later. Untainting or deleting the holders, deleting the target
//     or unbinding it cancels the eviction.
//   - A target that is leaving on its own ([Target.Leaving]) is never acted on.
//   - Right before it acts, the Engine decides again from the Source's current state of the
//     target (its UID included) and of its holders, with the same rules and the same
//     reports as an update: a stale schedule never acts on a target that changed, or that
//     was re-created under the same name.
//   - A failed action is retried with backoff until it succeeds, the target is gone or the
//     eviction is cancelled; it is never dropped. Each call is bounded by a timeout, and a
//     panic is recovered and retried.
//   - Budgets against mass eviction, off by default: [Options.RateLimit],
//     [Options.TaintRateLimits], and [Options.Brake], which pauses a taint key's evictions
//     while more than a fraction of the holders (of all, or of one group) carry it; and
//     [Options.Pauser], through which the caller holds back evictions by budgets of its
//     own (such as the share of the targets a taint would evict) until [Engine.Resume].
//   - [Engine.Pending] previews what will be acted on, and when; [Options.DryRun] acts on
//     nothing but reports everything; [Engine.WaitIdle] lets a test or a simulation on a
//     fake clock wait until everything it fed has been done.
//   - The [Observer] is told every decision, under an exact contract: each eviction opens
//     with Scheduled and closes with exactly one Succeeded, Cancelled or Skipped.
//
// Each target's eviction is one value inside the Engine that owns all of its state and
// makes all of its transitions; the schedule (a
// [github.com/taintevict/taintevict/timedqueue]) only says when it wants a worker.
//
// # Bad input
//
// A target with no bindings is not evicted. A binding to a holder the Engine has not been
// told about is decided against the holder as the Source has it; one the Source does not
// have either counts as untainted. Tolerations are matched as
// [github.com/taintevict/taintevict/tolerations.Tolerates] does: one the API server would
// reject (an unknown operator, say) tolerates nothing, and a negative tolerationSeconds
// means now, as in Kubernetes. A failing Source is retried with backoff; a failing,
// hanging or panicking Actuator is retried with backoff, each call bounded by
// Options.ActTimeout. Nothing panics on bad input. A Source or Observer method that panics
// in one of the Engine's workers (a bug of the caller's) stops the Engine: [Engine.Run]
// returns the panic as a *[PanicError], rather than go on from a decision made in part. A
// lookup of the Source that fails is logged as an error (the first, then one a minute while
// it keeps failing) and counted in [Stats].SourceErrors.
//
// # Reading the code
//
// One eviction, from a target's update to the Actuator, passes through these files in
// this order, and through none twice:
//
//   - engine.go: [Engine.TargetUpdated] queues the update and returns.
//   - internal/intake: a worker of the target's holder takes it, merged with any other
//     update of the same target, after its holder's updates.
//   - update.go: the worker takes the target's lock and reads it from the Source.
//   - view.go: newView fills what the decision sees: the target's bindings, and each
//     holder's started NoExecute taints and group.
//   - decide.go: decide says act at T (now, or later), or never and why; it is pure.
//   - lifecycle.go: settle applies the decision to the target's eviction through its
//     transitions (open: Scheduled), and arm asks the schedule for a worker at T.
//   - timedqueue: at T an act worker takes the eviction.
//   - act.go: under the lock again, the recheck reads the Source (view, decide and the
//     lifecycle once more, the same functions); the budgets admit it (internal/budget), the
//     transition start reports Started, and the Actuator is called, bounded by
//     internal/timeout, its rate and outcome counted by internal/concurrency; afterCall
//     applies the outcome (succeed, fail, finish).
//
// What a target's eviction is, in which state, is in lifecycle.go alone; where it lives,
// and its lock, in internal/store; each budget is a file of internal/budget.
//
// # Locks
//
// In the order they are taken, never the other way:
//
//  1. a target's stripe lock (internal/store): taken by every decision about the target,
//     held across its Source lookups, Observer calls and the rest of this list; one at a
//     time;
//  2. the gate's lock (internal/budget): the budgets and the holds; also taken alone, by
//     HolderUpdated, HolderDeleted and Resume;
//  3. the act workers' limit's (internal/concurrency), under which the schedule's is taken
//     to apply a new limit;
//  4. leaf locks, taken last and alone: the holder table's (holders.go), the unreachable
//     index's (engine.go), the schedule's (timedqueue).
//
// The intake's shard locks (internal/intake) are taken with no other lock held. The update
// methods, Resume and RetryUnreachable take no stripe lock: they queue updates, or wake
// evictions in the schedule, which an act worker then looks at under the lock.
package engine
