// Package budget holds evictions that are due back, by budgets against mass eviction: a
// [Gate] asks its [Budget]s in order and the first that says wait decides. The engine's
// order: [Confirm], the [Brake], the caller's [Pauser], [InFlight], the [Window]s per
// namespace and per owner, [Damping], and the rate limits ([Tokens]).
//
// A budget is one file here and one field of the engine's Options: it implements Budget
// (NeedsCauses, Admit, Release), keeps whatever it counts itself, and may keep per
// eviction state, which the gate carries in the eviction's [Hold]. A budget that holds
// evictions until something changes answers with a [Scope], and whoever sees the change
// calls [Gate.Wake] with it; one that counts what went is a [Recorder], one that follows
// what went until it ends a [Tracker]; one whose room opens at other times a [Refiller].
// Budgets that reserve something for a waiting eviction (a slot of the rate limits) come
// last: a budget asked after them could hold the eviction past what it reserved.
//
// # Locks
//
// The gate's lock guards the budgets and the holds. The engine takes it under a target's
// stripe lock (Admit, Release) or alone (Wake, HolderUpdated, Ended); under it nothing is
// called but the budgets, and the caller's Pauser and Census, which must not call back into
// the engine.
package budget
