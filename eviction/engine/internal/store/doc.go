// Package store holds the engine's entries, one per target key, and the locks that order
// the decisions about each target.
//
// Keys hash onto 256 stripes. A stripe has a lock, the entries of its keys in pages of
// slots that never move, and an open-addressing index from key to slot; an entry is named
// by an [ID] (stripe, slot and the slot's generation) that goes stale when the entry is
// dropped, so that a timer or a list that still holds it finds nothing rather than the
// entry that came after.
//
// # Locks
//
// Each stripe's lock guards that stripe's entries, index and scratch space, and nothing
// else. The engine takes it first, before any lock of its own (the budgets', the holders',
// the schedule's); a goroutine holds at most one stripe lock at a time.
package store
