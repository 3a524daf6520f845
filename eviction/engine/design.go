package engine

// This comment is for the engine's maintainers; the package documentation (doc.go) is for
// its users.
//
// Reading the code.
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
//     internal/timeout, its latency counted by internal/concurrency; afterCall applies the
//     outcome (succeed, fail, finish).
//
// What a target's eviction is, in which state, is in lifecycle.go alone; where it lives,
// and its lock, in internal/store; each budget is a file of internal/budget.
//
// Locks.
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
