package engine

// BadTransitions returns how many transitions the Engine made from a state that their row
// of eviction.go's table does not leave from: 0 unless the lifecycle has a bug.
func (e *Engine[T]) BadTransitions() uint64 { return e.stats.badTransitions.Load() }

// UnreachableIndexLen returns how many evictions RetryUnreachable would look at.
func (e *Engine[T]) UnreachableIndexLen() int {
	e.unreach.mu.Lock()
	defer e.unreach.mu.Unlock()
	return len(e.unreach.set)
}
