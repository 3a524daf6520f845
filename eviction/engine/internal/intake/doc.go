// Package intake queues the holder and target updates an engine is fed, merged by key, for
// a fixed set of workers; the update of a holder whose targets could not be listed comes
// back after a growing delay, from a timedqueue.
//
// Each worker's shard has a lock, which guards its queues and counts. It is held while
// nothing is called but the holder merge, and never while the retries' queue is called.
package intake
