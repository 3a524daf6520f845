// Package budget holds evictions that are due back, by budgets against mass eviction: a
// [Gate] asks its [Budget]s in order (the brake, the caller's pauses, the rate limits) and
// the first that says wait decides.
//
// A budget is one file here and one field of the engine's Options: it implements Budget
// (NeedsCauses, Admit, Release), keeps whatever it counts itself, and may keep per
// eviction state, which the gate carries in the eviction's [Hold]. A budget that holds
// evictions until something changes answers with a [Scope], and whoever sees the change
// calls [Gate.Wake] with it.
//
// # Locks
//
// The gate's lock guards the budgets and the holds. The engine takes it under a target's
// stripe lock (Admit, Release) or alone (Wake, HolderUpdated); under it nothing is called
// but the budgets, and the caller's Pauser, which must not call back into the engine.
package budget
