// Package budget holds back evictions that are due, by budgets against mass eviction: a
// [Gate] asks its [Budget]s in order, and the first that says wait decides.
//
// A budget is a file here, with a type that implements Budget and whichever of the
// optional interfaces the gate asks for by type: [Recorder] (told what went), [Tracker]
// (told when what went ends), [Refiller] (its room opens at other times), [HolderCounter]
// (told of every holder update). It keeps what it counts itself, and per eviction state in
// the eviction's [Hold]. One that holds evictions until something changes answers with a
// [Scope], and whoever sees the change calls [Gate.Wake] with it. Budgets that reserve (the
// rate limits' slots) come last: one asked after them could hold an eviction past its slot.
//
// # Locks
//
// The gate's lock guards the budgets and the holds. Callers may take it under locks of
// their own; under it nothing is called but the budgets, and the functions they were made
// with (Confirm's reach, InFlight's kept), which must take only locks of their own.
package budget
