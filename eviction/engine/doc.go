// Package engine is timed, toleration-based eviction for anything that carries taints
// (holders: nodes, DRA devices, clusters) and anything bound to them (targets: pods,
// workloads), with no Kubernetes client, informer or real clock built in. The caller's
// informers feed it updates; it calls the caller's [Actuator] on each target whose
// tolerations have run out. [github.com/taintevict/taintevict/eviction.Manager], for pods
// on nodes, is one instantiation of it.
//
//	e, err := engine.New(actuator, source, engine.Options{}) // your Actuator and Source[T]
//	if err != nil { ... }
//	go e.Run(ctx)                      // until ctx is done; waits for what it started
//	e.HolderUpdated(engine.Holder{Name: "east", Taints: taints}) // from the informers' handlers
//	e.TargetUpdated(workload)
//	e.Pending()                        // what will be acted on, when, and why it waits
//
// # The model
//
// A [Holder] has a name, its taints (v1.Taint; device taints convert with
// tolerations.DeviceTaints) and a group (a zone, a pool). A target is bound to one or more
// holders, each [Binding] with its own tolerations. A binding is due when a NoExecute taint
// of its holder is not tolerated, or when the toleration runs out
// ([github.com/taintevict/taintevict/tolerations.Deadline]); the target is due at the
// earliest deadline over its bindings. The [Actuator] acts on it by [Ref], with the UID
// that was due: it may delete, evict, migrate or move it. The caller's [Source] reads
// targets and holders from its informers' stores; decisions are level-triggered, so
// updates that come late, out of order or merged lose nothing.
//
// # Guarantees
//
//   - Deadlines survive a restart: a taint's countdown starts at its TimeAdded, or when
//     first seen if that is missing or in the future ([FromTimeAdded]).
//   - A change of taints, tolerations or bindings decides again, earlier or later;
//     untainting, deleting or unbinding cancels. A target that is leaving on its own
//     ([Target.Leaving]) is never acted on.
//   - Right before it acts, the Engine decides again from the Source's current state,
//     UID included: a stale schedule never acts on a target re-created under its name.
//   - A failed action is retried with backoff until it succeeds, the target is gone or the
//     eviction is cancelled; never dropped. Each call is bounded by [Options.ActTimeout].
//   - Budgets against mass eviction ([Options]: RateLimit, TaintRateLimits, Brake,
//     InFlight, NamespaceLimit, OwnerLimit, LoopDamping, Confirm, Pauser), each off by
//     default, each reported through [Observer.Delayed] with its [Reason].
//   - The [Observer] hears every decision: each eviction opens with Scheduled and closes
//     with exactly one of Succeeded, Cancelled or Skipped.
//
// # Bad input
//
// A target with no bindings is not evicted; a binding to a holder unknown to the Engine is
// read from the Source, and one the Source does not have either counts as untainted. A
// toleration the API server would reject tolerates nothing; a negative tolerationSeconds
// means now. A failing Source, and a failing, hanging or panicking Actuator, are retried
// with backoff; a failing lookup is logged once a minute and counted in
// [Stats].SourceErrors. A Source or Observer that panics (a bug of the caller's) stops the
// Engine: [Engine.Run] returns a *[PanicError]. Nothing panics on bad input.
package engine

// The notes below are for the engine's maintainers, so they are not part of the package
// documentation above, which is for its users.
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
//  2. the gate's lock (internal/budget): the budgets and the holds, and under it the
//     caller's Pauser and Census (which take only locks of their own); also taken alone, by
//     HolderUpdated, HolderDeleted, Resume and Recounted;
//  3. the act workers' limit's (internal/concurrency), under which the schedule's is taken
//     to apply a new limit;
//  4. leaf locks, taken last and alone: the holder table's (holders.go), the unreachable
//     index's (engine.go), the schedule's (timedqueue).
//
// The intake's shard locks (internal/intake) are taken with no other lock held. The update
// methods, Resume, Recounted and RetryUnreachable take no stripe lock: they queue updates,
// or wake evictions in the schedule, which an act worker then looks at under the lock. A
// Census must therefore call Recounted with its own lock released.
