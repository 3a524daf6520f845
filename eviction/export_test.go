package eviction

// ShardOf exposes shardOf to the external tests, which pick node names that land on
// different event workers.
var ShardOf = shardOf
