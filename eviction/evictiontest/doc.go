// Package evictiontest provides in-memory stand-ins for what an
// [github.com/taintevict/taintevict/eviction.Manager] needs from its caller: a [Cache] of
// nodes and pods, a [Deleter] that records what it was asked to delete, and an [Observer]
// that records every decision. Tests, examples and simulations use them; all are safe for
// concurrent use.
package evictiontest
