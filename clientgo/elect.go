package clientgo

import (
	"context"

	"k8s.io/client-go/kubernetes"
)

// Elector runs a function only while this replica holds a coordination.k8s.io Lease: the
// leader election of [Controller], for a controller of another kind (the device taint
// controller of package github.com/taintevict/taintevict/clientgo/device runs under one).
// To run several controllers under one Lease, give one [Controller] the others' work in
// [Options.Alongside] instead.
//
// Its methods are safe for concurrent use. The zero Elector is not usable: create one with
// [NewElector].
type Elector struct{ e *elector }

// NewElector returns the Elector of the Lease opts describes, with client. It fails when
// opts.Namespace is empty.
func NewElector(client kubernetes.Interface, opts LeaderElection) (*Elector, error) {
	e, err := newElector(client, opts)
	if err != nil {
		return nil, err
	}
	return &Elector{e: e}, nil
}

// Run campaigns for the Lease until ctx is done or the Lease is lost, and runs lead while
// it holds it, with a context that ends at once when the Lease is lost. The Lease is
// released (unless LeaderElection.KeepLeaseOnStop) only after lead has returned. lead is to
// return when its context ends; if it returns an error before that, it failed: Run stops
// campaigning, releases the Lease and returns that error (and Ready and Healthy report it).
// Otherwise Run returns nil when ctx ended it, [ErrLeaseLost] when the Lease was lost (the
// process should exit, to restart as a standby), or an error of client-go's leader
// election. Run is called once.
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	return e.e.run(ctx, lead)
}

// Ready returns nil while Run campaigns or leads, and an error before, after, once the
// Lease is lost, and once lead failed. It does not block.
func (e *Elector) Ready() error { return e.e.ready() }

// Healthy returns nil unless the Lease was lost, lead failed, or this replica leads and has
// not renewed its Lease for longer than the Lease's duration plus 20 s. It does not block.
func (e *Elector) Healthy() error { return e.e.healthy() }

// Leading reports whether lead runs.
func (e *Elector) Leading() bool { return e.e.leading.Load() }
