package budget

// Pauser is the budget of the caller's own pauses: the engine's Options.Pauser, asked
// after the brake and before the rate limits. Paused answers whether the eviction waits,
// and for which scope of the caller's; [Gate.Wake] of that scope (KindPauser) lets the
// evictions it held be asked again.
type Pauser struct {
	Paused func(r *Request) (scope string, paused bool)
}

// NeedsCauses reports true: the caller is told the causes.
func (p Pauser) NeedsCauses() bool { return true }

// Admit asks the caller.
func (p Pauser) Admit(r *Request, _ any) (Verdict, any) {
	if scope, paused := p.Paused(r); paused {
		return Verdict{Wait: true, Scope: PauserScope(scope), Reason: "Paused"}, nil
	}
	return Go, nil
}

// Release does nothing: a pause reserves nothing.
func (Pauser) Release(any, int64) {}

// PauserScope returns the scope that the caller's Pauser named scope.
func PauserScope(scope string) Scope { return Scope{Kind: KindPauser, Key: scope} }
