package budget

// Reach is what a scope (a taint key on nodes, a DeviceTaintRule, a pool's taints) would
// evict, as the caller's census last counted it.
type Reach struct {
	// Scope names it; the caller wakes the evictions it holds by this name.
	Scope string
	// Evicts is how many targets it would evict; Targets, how many there are in all.
	Evicts, Targets int
	// Confirmed: an operator confirmed it; it holds nothing.
	Confirmed bool
	// Counted is false while the census has not counted it yet: it holds its evictions
	// until it has.
	Counted bool
}

// Exceeds reports whether evicts of targets is more than fraction of them, and at least
// least (0: 1): the rule of the Confirm budget, for callers that show it.
func Exceeds(fraction float64, least, evicts, targets int) bool {
	return fraction > 0 && evicts >= max(least, 1) && float64(evicts) > fraction*float64(targets)
}

// Confirm is the budget that holds the evictions of a taint that would evict more than a
// fraction of all targets at once, until an operator confirms it or it would evict fewer
// (kubernetes#141422: one DeviceTaintRule that selects every device). The caller counts
// (reach): for each cause, the scopes that put it on its holder, as it last counted them,
// at a cost of O(1) each, since the gate's lock is held. An eviction is held only when each
// of its causes is held, that is when every scope of the cause holds: an eviction that
// another taint makes due goes. A cause of no scope the census knows holds nothing.
//
// A held eviction waits under its scope, released when the caller says that scope's counts
// or confirmation changed; one held by more than one scope waits under the scope they all
// share, [ConfirmScope](""), which every recount releases, so that a change of any of its
// scopes looks at it again. Make it with NewConfirm.
type Confirm struct {
	fraction float64
	least    int
	reach    func(c Cause, into []Reach) []Reach
	buf      []Reach
}

// NewConfirm returns the budget that holds scopes that would evict more than fraction of
// all targets, and at least least of them (0: 1); nil when fraction is not positive.
func NewConfirm(fraction float64, least int, reach func(c Cause, into []Reach) []Reach) *Confirm {
	if fraction <= 0 {
		return nil
	}
	return &Confirm{fraction: fraction, least: least, reach: reach}
}

// holds reports whether the scope r holds its evictions.
func (c *Confirm) holds(r Reach) bool {
	return !r.Confirmed && (!r.Counted || Exceeds(c.fraction, c.least, r.Evicts, r.Targets))
}

// Admit holds the eviction when each of its causes is held.
func (c *Confirm) Admit(r *Request, _ any) (Verdict, any) {
	held, several := "", false
	for _, cause := range r.Causes {
		c.buf = c.reach(cause, c.buf[:0])
		if len(c.buf) == 0 {
			return Go, nil
		}
		for _, rc := range c.buf {
			if !c.holds(rc) {
				return Go, nil
			}
			if held == "" {
				held = rc.Scope
			}
			several = several || rc.Scope != held
		}
	}
	if held == "" {
		return Go, nil // no cause: nothing to hold it for
	}
	if several {
		held = "" // any of its scopes may release it
	}
	return Verdict{Wait: true, Scope: ConfirmScope(held), Reason: "Unconfirmed"}, nil
}

// Release does nothing: a hold reserves nothing.
func (c *Confirm) Release(any, int64) {}

// ConfirmScope returns the scope under which Confirm holds the evictions of the caller's
// scope name; ConfirmScope("") holds those of more than one scope. A recount of a scope
// wakes both.
func ConfirmScope(name string) Scope { return Scope{Kind: KindConfirm, Key: name} }

// HoldsRetries marks the confirm a [Condition].
func (*Confirm) HoldsRetries() {}
