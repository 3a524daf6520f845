package engine

import (
	"fmt"
	"slices"
	"sync"
)

// The transitions every test of this package makes are checked against the lifecycle's
// table (see checkTransition); TransitionErrors returns those it does not allow.
var (
	transitionMu     sync.Mutex
	transitionErrors []string
)

func init() {
	checkTransition = func(name string, from, to state) {
		tr, ok := transitions[name]
		if ok && slices.Contains(tr.from, from) && tr.to == to {
			return
		}
		transitionMu.Lock()
		defer transitionMu.Unlock()
		transitionErrors = append(transitionErrors, fmt.Sprintf("%s: %s -> %s", name, from, to))
	}
}

// TransitionErrors returns the transitions made so far that the table does not allow.
func TransitionErrors() []string {
	transitionMu.Lock()
	defer transitionMu.Unlock()
	return slices.Clone(transitionErrors)
}

// UnreachableIndexLen returns how many evictions RetryUnreachable would look at.
func (e *Engine[T]) UnreachableIndexLen() int {
	e.unreach.mu.Lock()
	defer e.unreach.mu.Unlock()
	return len(e.unreach.ids)
}
