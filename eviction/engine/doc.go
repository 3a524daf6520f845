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
//	e.Synced()                         // once the informers have synced
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
//   - The [Observer] hears every decision: each eviction opens with Scheduled and closes
//     with exactly one of Succeeded, Cancelled or Skipped.
//
// # Budgets
//
// Budgets against mass eviction ([Options]: RateLimit, TaintRateLimits, Brake, InFlight,
// NamespaceLimit, OwnerLimit, LoopDamping, Confirm) are each off by default, and each
// reports what it holds through [Observer.Delayed] with its [Reason]. Whatever the order
// of the updates, and across restarts of the Engine (a new one on the same Source, told
// [Engine.Synced] once fed), they promise, against the state of the Source:
//
//   - no target due because of a taint key is acted on while the Brake's rule holds for
//     that key over the holders of the Source;
//   - no target is acted on while each taint that makes it due has every scope of the
//     Census holding it unconfirmed (Confirm);
//   - never more evictions in flight than InFlight allows, as [InFlight] counts them;
//   - never more than NamespaceLimit.Max (OwnerLimit.Max) evictions of one namespace
//     (workload) let go within any span of Per;
//   - every target that is due, and that no budget holds, is acted on: none waits for
//     good (a failing Actuator aside, whose retries follow [Options.Backoff]).
//
// A model-based test drives the Engine and [github.com/taintevict/taintevict/eviction.Manager]
// through random sequences of updates, restarts, failing and hanging actuators, pods that
// stay Terminating and confirmations, and checks each of these after every step.
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
// One eviction's state is in its *eviction (eviction.go: the value, its states and every
// transition) and in the schedule's entry for it (timedqueue); the store (store.go) holds
// the pointer by key, the budgets' waiting sets (internal/budget) and RetryUnreachable's
// index (unreachable.go) hold the same pointer while it waits there. The path of a node's
// taint to the Actuator, in the order the files are entered:
//
//   - engine.go: HolderUpdated counts the holder for the brake (internal/budget, under the
//     gate's lock) and queues the update (internal/intake).
//   - internal/intake: the holder's worker takes it, before its targets' updates.
//   - update.go: onHolder records the taints (holders.go) and lists the holder's targets
//     from the Source; for each, decideOn takes its stripe's lock (store.go), reads it,
//     fills a view of it and its holders (view.go, holders.go), and settles its eviction
//     (eviction.go), which asks the rules (decide.go), opens it (Scheduled) and arms it
//     in the schedule (timedqueue).
//   - timedqueue: at the deadline an act worker calls work (act.go).
//   - act.go: under the stripe's lock again, the recheck reads the Source, and view.go,
//     decide.go and eviction.go decide once more; the budgets admit it (internal/budget);
//     start (eviction.go) reports Started; the Actuator is called without the lock,
//     bounded by the timeout, its rate counted for the act workers' limit
//     (internal/concurrency); afterCall applies the outcome (eviction.go).
//   - The removal comes back as a target update, through intake and update.go, and settle
//     forgets the eviction (eviction.go), which tells InFlight it ended (internal/budget).
//
// # Locks
//
// In the order they are taken, never the other way:
//
//  1. a stripe's lock (store.go): taken by every decision about a target, one at a time,
//     and held across its Source lookups, Observer calls and the rest of this list, but
//     not across the Actuator's call;
//  2. the gate's (internal/budget): the budgets and the holds; under a stripe's lock
//     (Admit, Release, Ended, Due) or alone (HolderUpdated, Wake); under it only the
//     budgets run, and the caller's Census (which takes only locks of its own);
//  3. the act workers' limit's (internal/concurrency), taken alone by the act workers
//     around a call, and under which the schedule's lock is taken to apply a new limit;
//  4. leaf locks, taken last and alone: the holder table's (holders.go), the unreachable
//     index's (unreachable.go), the schedule's (timedqueue), the intake's shard locks
//     and its retry schedule's (internal/intake).
//
// The update methods, Synced, Recounted and RetryUnreachable take no stripe lock: they
// count for the brake, queue updates, or wake evictions in the schedule, which an act
// worker then looks at under the lock. A Census must call Recounted with its own lock
// released.
