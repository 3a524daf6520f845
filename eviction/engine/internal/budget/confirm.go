package budget

// Reach is what a scope (a taint key on nodes, a DeviceTaintRule, a pool's taints) would
// evict, as the caller's census last counted it. The caller wakes the evictions it holds by
// its name, Scope.
type Reach struct {
	Scope           string
	Evicts, Targets int  // the targets it would evict, of all there are
	Confirmed       bool // by an operator: it holds nothing
	Counted         bool // false until the census has counted it: it holds its evictions
}

// Exceeds reports whether evicts of targets is more than fraction of them, and at least
// least (0: 1): the rule of the Confirm budget, for callers that show it.
func Exceeds(fraction float64, least, evicts, targets int) bool {
	return fraction > 0 && evicts >= max(least, 1) && float64(evicts) > fraction*float64(targets)
}

// Confirm is the engine's Confirm: it holds the evictions of a taint that would evict more
// than a fraction of all targets. reach gives, for each cause, the scopes that put it on
// its holder, as the caller last counted them, in O(1) each (the gate's lock is held). An
// eviction is held when each of its causes is held by every one of its scopes; a cause of
// no scope the census knows holds nothing. One held by one scope waits under it; one held
// by several, under [ConfirmScope](""), which every recount releases. Make it with
// NewConfirm.
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

// Admit holds the eviction when each of its causes is held.
func (c *Confirm) Admit(r *Request, _ any) (Verdict, any) {
	held, several := "", false
	for _, cause := range r.Causes {
		c.buf = c.reach(cause, c.buf[:0])
		if len(c.buf) == 0 {
			return Go, nil
		}
		for _, rc := range c.buf {
			if rc.Confirmed || rc.Counted && !Exceeds(c.fraction, c.least, rc.Evicts, rc.Targets) {
				return Go, nil
			}
			if held == "" {
				held = rc.Scope
			}
			several = several || rc.Scope != held
		}
	}
	switch {
	case held == "":
		return Go, nil // no cause: nothing to hold it for
	case several:
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
