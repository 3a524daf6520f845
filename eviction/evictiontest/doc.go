// Package evictiontest provides in-memory stand-ins for what an [eviction.Manager] or an
// [engine.Engine] needs from its caller, for tests, examples and simulations: a [Cache] of
// nodes and pods, a [Source] of holders and targets of any kind, a [Deleter] that records
// what it was asked to delete, and an [Observer] that records every decision.
//
//	var cache evictiontest.Cache
//	deleter, obs := &evictiontest.Deleter{}, &evictiontest.Observer{}
//	m, err := eviction.New(deleter, &cache, eviction.Options{Clock: clk, Observer: obs})
//	...
//	cache.SetNode(node)
//	m.NodeUpdated(nil, node) // as an informer would
//	clk.Step(5 * time.Minute)
//	err = m.WaitIdle(ctx) // then deleter.Calls() and obs.Events() tell what happened
//
// [CheckContract] checks an Observer's records against the Observer's contract. All are
// safe for concurrent use, and their zero values are ready to use.
package evictiontest
