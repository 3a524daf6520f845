// Package concurrency decides how many actuator calls an engine runs at once: a fixed
// number, or one that follows the calls' latency as TCP Vegas follows a round trip, so
// that whatever limits the calls (a client's rate limiter at any QPS, or the API server)
// always has a few waiting and never many.
//
// # Locks
//
// A Limit's lock guards its counts; the function that applies a limit is called under it
// and must not call back.
package concurrency
