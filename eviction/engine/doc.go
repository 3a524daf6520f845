// Package engine is timed, toleration-based eviction for anything that carries taints
// (holders: nodes, DRA devices, clusters) and anything bound to them (targets: pods,
// workloads), with no Kubernetes client, informer or real clock built in. The caller's
// informers feed it updates; it calls the caller's [Actuator] on each target whose
// tolerations have run out. [github.com/taintevict/taintevict/eviction.Manager] is its
// instantiation for pods on nodes.
//
//	e, err := engine.New(actuator, source, engine.Options{}) // your Actuator and Source[T]
//	if err != nil { ... }
//	go e.Run(ctx)
//	e.HolderUpdated(engine.Holder{Name: "east", Taints: taints}) // from the informers' handlers
//	e.TargetUpdated(workload)
//	e.Synced()  // once the informers have synced
//	e.Pending() // what will be acted on, when, and why it waits
//
// # The model
//
// A [Holder] has a name, taints (device taints convert with tolerations.DeviceTaints) and a
// group (a zone, a pool). A target is bound to holders, each [Binding] with its own
// tolerations. A binding is due when a NoExecute taint of its holder is not tolerated, or
// the toleration runs out ([github.com/taintevict/taintevict/tolerations.Deadline]); the
// target is due at the earliest deadline of its bindings. The [Actuator] acts on it by
// [Ref], with the UID that was due. Decisions read the caller's [Source] and are
// level-triggered: updates that come late, out of order or merged lose nothing.
//
// # Guarantees
//
//   - Deadlines survive a restart ([FromTimeAdded]).
//   - A change of taints, tolerations or bindings decides again; untainting, deleting or
//     unbinding cancels; a target leaving on its own ([Target.Leaving]) is never acted on.
//   - Right before it acts, the Engine decides again from the Source, UID included: a
//     stale schedule never acts on a target re-created under its name.
//   - A failed action is retried with [Options.Backoff] until it succeeds, the target is
//     gone or the eviction is cancelled; never dropped. Each call is bounded by
//     [Options.ActTimeout].
//   - The [Observer] hears every decision: each eviction opens with Scheduled and closes
//     with exactly one of Succeeded, Cancelled or Skipped.
//
// # Budgets
//
// The budgets against mass eviction (the [Options] from RateLimit to Confirm) are off by
// default; each reports what it holds through [Observer.Delayed] with its [Reason].
// Whatever the order of the updates, and across restarts (a new Engine on the same Source,
// told [Engine.Synced] once fed), they promise, against the Source's state:
//
//   - no target due because of a taint key is acted on while the [Brake] holds that key;
//   - none while each taint that makes it due has every scope of the [Census] holding it
//     unconfirmed ([Confirm]);
//   - never more evictions in flight than [InFlight] counts and allows;
//   - never more than NamespaceLimit.Max (OwnerLimit.Max) evictions of one namespace
//     (workload) let go within any span of Per ([Window]);
//   - every due target that no budget holds is acted on: none waits for good (a failing
//     Actuator's retries aside).
//
// A model-based test checks each of these after every step of random sequences of
// updates, restarts, failing and hanging actuators, and confirmations.
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

// For the maintainers (not part of the package documentation):
//
// # Reading the code
//
// One eviction's state is its *eviction (eviction.go: the value, its states and every
// transition); the store (store.go), the schedule (timedqueue), the budgets' waiting sets
// (internal/budget) and RetryUnreachable's index (unreachable.go) hold the pointer. A
// taint's path to the Actuator:
//
//   - engine.go: HolderUpdated counts the holder for the brake (internal/budget) and
//     queues the update (internal/intake), taken by its worker before its targets'.
//   - update.go: onHolder records the taints (holders.go) and lists the holder's targets;
//     decideOn locks each one's stripe (store.go), fills its view (view.go) and settles its
//     eviction (eviction.go), opened and armed in the schedule when the rules (decide.go) say.
//   - act.go: at the deadline an act worker locks the stripe again, rechecks from the
//     Source and settles once more; the budgets admit it; start reports Started; the
//     Actuator is called without the lock, bounded, its rate counted for the act
//     workers' limit (internal/concurrency); afterCall applies the outcome.
//   - The removal comes back as a target update, and settle forgets the eviction, which
//     tells InFlight that it ended.
//
// # Locks
//
// In the order they are taken, never the other way:
//
//  1. a stripe's (store.go), for every decision about a target, held across its Source
//     lookups, Observer calls and the rest of this list, not across the Actuator's call;
//  2. the gate's (internal/budget), under a stripe's (Admit, Release, Ended, Refill, Due)
//     or alone (HolderUpdated, Wake); under it only the budgets run, and the Census, which
//     takes only locks of its own;
//  3. the act workers' limit's (internal/concurrency), alone around a call, and over the
//     schedule's lock to apply a new limit;
//  4. leaf locks, taken last and alone: the holder table's (holders.go), the unreachable
//     index's (unreachable.go), the Stats counters' (stats.go), the schedule's
//     (timedqueue), the intake's shard locks and its retry schedule's (internal/intake).
//
// The update methods, Synced, Recounted and RetryUnreachable take no stripe lock. A Census
// calls Recounted with its own lock released.
