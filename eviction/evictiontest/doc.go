// Package evictiontest provides in-memory stand-ins for what an
// [github.com/taintevict/taintevict/eviction.Manager] or an
// [github.com/taintevict/taintevict/eviction/engine.Engine] needs from its caller: a [Cache]
// of nodes and pods and a [Source] of holders and targets of any kind, a [Deleter] that
// records what it was asked to delete, an [Observer] that records every decision, and
// [CheckContract], which checks recorded decisions against the Observer's contract. Tests,
// examples and simulations use them; all are safe for concurrent use.
package evictiontest
