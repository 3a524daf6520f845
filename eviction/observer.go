package eviction

import "github.com/taintevict/taintevict/eviction/engine"

// Observer is told everything a [Manager] decides, so that the caller can turn it into
// Kubernetes Events, metrics and logs. It is the engine's [engine.Observer]: the same
// contract, with each pod as a [PodRef] whose Holder is its node.
type Observer = engine.Observer

// Attempt is one try at an eviction, as [engine.Observer.Started], [engine.Observer.Failed] and
// [engine.Observer.Succeeded] report it; see [engine.Attempt].
type Attempt = engine.Attempt

// NopObserver implements [Observer] with methods that do nothing; embed it to implement
// only some of them. See [engine.NopObserver].
type NopObserver = engine.NopObserver

// Observers is an [Observer] that tells each of its observers every decision, in order;
// see [engine.Observers].
type Observers = engine.Observers
