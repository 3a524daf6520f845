package eviction

// ShardOf exposes shardOf to the external tests, which pick node names that land on
// different event workers.
var ShardOf = shardOf

// DeletedRecords returns how many deleted pods the Manager remembers.
func (m *Manager) DeletedRecords() int { return m.deleted.len() }
