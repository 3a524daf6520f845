package budget

import "sync/atomic"

// Synced is the budget that holds every eviction until the caller has been told of every
// holder and target it has (its informers have synced): the budgets that count them (the
// brake, Confirm's census) would count a part, and let go what the whole would hold (a
// restart in the middle of an outage, whose deadlines are long past). The caller calls
// Done, then [Gate.Wake] with [SyncedScope]. Make it with new(Synced).
type Synced struct{ done atomic.Bool }

// Done records that the caller has been told of everything; from then on Admit lets go.
func (s *Synced) Done() { s.done.Store(true) }

// Admit holds the eviction until Done.
func (s *Synced) Admit(*Request, any) (Verdict, any) {
	if s.done.Load() {
		return Go, nil
	}
	return Verdict{Wait: true, Scope: SyncedScope, Reason: "NotSynced"}, nil
}

// Release does nothing: a wait reserves nothing.
func (s *Synced) Release(any, int64) {}

// SyncedScope is the scope under which Synced holds evictions.
var SyncedScope = Scope{Kind: KindSynced}

// HoldsRetries marks the wait for Synced a [Condition].
func (*Synced) HoldsRetries() {}
