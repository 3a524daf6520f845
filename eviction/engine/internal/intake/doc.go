// Package intake queues the holder and target updates an engine is fed, and has them
// processed in order by a fixed set of workers, each update of a key merged with the one
// already waiting; the updates of a holder whose targets could not be listed come back
// after a growing delay.
//
// # Locks
//
// Each shard's lock guards its queues; the retries' lock guards their counts. Neither is
// held while anything else is called: the handlers run with no lock of this package.
package intake
