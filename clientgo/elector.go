package clientgo

import (
	"context"
	"errors"
)

// ErrLeaseLost is returned by an [Elector]'s Run, and so by [Controller.Run], when this
// replica lost the lead: it has stopped evicting, and the process should exit so that it
// restarts as a standby.
var ErrLeaseLost = errors.New("clientgo: leader election lost")

// ErrNotElecting is what an [Elector]'s Ready returns (or wraps) before its Run has begun
// and after it has returned. A [Controller] whose caches have synced and that is about to
// call Run reports itself ready through it: between the two, a readiness probe would
// otherwise see a replica that is about to campaign as not ready.
var ErrNotElecting = errors.New("clientgo: leader election not running")

// Elector runs a controller's work only while this replica leads ([Options.Elector], and
// package clientgo/device's). Package clientgo/lease implements it on a Lease; it is an
// interface here so that a program that never elects does not link client-go's leader
// election.
//
// Implementations are safe for concurrent use; Ready, Healthy and Leading do not block.
type Elector interface {
	// Run campaigns until ctx is done or the lead is lost, and runs lead while this
	// replica leads, with a context that ends when it stops leading. A lead that returns
	// an error before its context ends has failed: Run then stops and returns that error.
	// Otherwise Run returns nil when ctx ended it, an error wrapping [ErrLeaseLost] when
	// the lead was lost, or an error of its own. Run is called once.
	Run(ctx context.Context, lead func(context.Context) error) error
	// Ready returns nil while Run campaigns or leads; before Run and after it, an error
	// that wraps [ErrNotElecting] or tells why Run ended.
	Ready() error
	// Healthy returns nil unless the process should be restarted (the lead lost, or not
	// renewed in time).
	Healthy() error
	// Leading reports whether lead runs.
	Leading() bool
}
