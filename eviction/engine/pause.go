package engine

// Cause is a NoExecute taint that makes a target due: the taint's Key, on the holder named
// Holder, whose group is Group. A [Pauser] is told the causes of each eviction that falls
// due.
type Cause struct {
	Holder string
	Key    string
	Group  string
}

// Pauser holds back evictions that are due, by budgets that the caller counts and the
// Engine cannot: the device taint adapter, for one, pauses the evictions of a
// DeviceTaintRule that would evict too large a share of the pods that use devices. Set it in
// Options.Pauser.
//
// The Engine asks Paused about every eviction that is due and has not yet passed the gate
// (its first attempt), after [Options.Brake] and before the rate limits, with the causes
// that make it due (every NoExecute taint it does not tolerate, or whose toleration has run
// out, on each of its holders). While Paused returns true, the eviction waits, as one the
// brake holds: the Observer is told Delayed with [ReasonPaused], [Engine.Pending] lists it
// with Delayed ReasonPaused, and it stays until the caller calls [Engine.Resume] with the
// scope Paused named; the Engine then asks again. An update that cancels or moves the
// eviction lets go of the hold, as for the brake.
//
// Paused is called from the Engine's act workers, under the Engine's locks: it must be safe
// for concurrent use, return quickly, never block, and never call the Engine. It must not
// keep causes, whose storage the Engine reuses. The Engine asks and records the hold under
// the same lock that Resume takes, so a caller that changes what Paused answers and then
// calls Resume never leaves an eviction held by a scope it released.
type Pauser interface {
	Paused(target Ref, causes []Cause) (scope string, paused bool)
}

// PauserFunc adapts a function to a [Pauser].
type PauserFunc func(target Ref, causes []Cause) (scope string, paused bool)

var _ Pauser = PauserFunc(nil)

// Paused calls f(target, causes).
func (f PauserFunc) Paused(target Ref, causes []Cause) (string, bool) { return f(target, causes) }

// Resume releases the evictions that Options.Pauser holds under scope: they go back to the
// schedule at the times they fell due, in deadline order, and the Pauser is asked about
// each again when an act worker takes it. A scope that holds nothing, or an Engine without
// a Pauser, makes it do nothing. It returns at once, and is safe for concurrent use (also
// from the Pauser's own goroutines, but not from within Paused).
func (e *Engine[T]) Resume(scope string) {
	if e.gate == nil || e.gate.pauser == nil {
		return
	}
	e.gate.mu.Lock()
	list := e.gate.resumeLocked([]brakeScope{{key: scope, caller: true}})
	e.gate.mu.Unlock()
	e.unpause(list)
}

// askPauser asks the Pauser about the eviction ref, due because of causes, under g.mu.
func (g *gate) askPauser(ref Ref, causes []cause) (brakeScope, bool) {
	g.told = g.told[:0]
	for _, c := range causes {
		g.told = append(g.told, Cause{Holder: c.holder, Key: c.key, Group: c.group})
	}
	scope, paused := g.pauser.Paused(ref, g.told)
	return brakeScope{key: scope, caller: true}, paused
}
