// Package concurrency decides how many actuator calls an engine runs at once: a fixed
// number, or one that follows the calls' throughput, so that whatever limits them (the API
// server, or a client's rate limiter at any QPS) is kept busy, with no more calls in flight
// than buy throughput (the knee). It probes for more calls while their rate rises, holds
// where it stops rising, and backs off when the server refuses calls for load; latency
// that rises with load does not bring it down by itself.
//
// # Locks
//
// A Limit's lock guards its counts; the function that applies a limit is called under it
// and must not call back.
package concurrency
