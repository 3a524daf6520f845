package eviction

// ShardOf returns the event worker, of n, that processes the updates of node and of its
// pods (FNV-1a over the name, as the engine hashes holders), so that the external tests can
// pick node names that land on the same worker, or on different ones.
func ShardOf(node string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(node); i++ {
		h ^= uint32(node[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// Records returns how many pods the Manager keeps a record of (see engine.Engine.Len).
func (m *Manager) Records() int { return m.e.Len() }
