package timedqueue

// Slot state: flags in the low byte, the attempts made of the current generation above.
// Packing both into one word keeps a slot at 48 bytes for 16-byte keys and values.
//
// A slot is free (0) until alloc gives it to a key (inUse). Then pending and running come
// and go: Schedule marks the key scheduled (pending), a worker claims it (running, not
// pending), and when the attempt finishes it is retried (pending again), or, when nothing
// is left to run, the slot is released (free again) or retired. Work that comes due while
// the key runs is parked, and pushed again when the attempt finishes. Besides alloc,
// retire and clearSlot, which set a whole state, only the methods below read or change
// the flags. q.mu must be held.
const (
	inUse   uint32 = 1 << iota // the slot belongs to a key in the index
	pending                    // the current generation waits to run (in the heap, or parked)
	parked                     // pending, came due while the key was running, not in the heap
	running                    // a worker runs an attempt of this key
	retired                    // no key's: freed, but still named by an index entry until a sweep

	flagBits       = 0xff
	attemptOne     = 1 << 8
	attemptCeiling = 1<<24 - 1 // attempt numbers stop growing there (decades of retries)
)

// attempts returns how many attempts were made of the current generation, at most
// attemptCeiling.
func (s *slot[K, V]) attempts() uint32 { return s.state >> 8 }

// isUsed, isRetired, isPending, isRunning and isParked read one flag each.
func (s *slot[K, V]) isUsed() bool    { return s.state&inUse != 0 }
func (s *slot[K, V]) isRetired() bool { return s.state&retired != 0 }
func (s *slot[K, V]) isPending() bool { return s.state&pending != 0 }
func (s *slot[K, V]) isRunning() bool { return s.state&running != 0 }
func (s *slot[K, V]) isParked() bool  { return s.state&parked != 0 }

// isRunningOnly reports whether an attempt runs and no newer work is pending.
func (s *slot[K, V]) isRunningOnly() bool { return s.state&(pending|running) == running }

// hasItem reports whether the current generation has an item in the heap or the ready
// run: it is pending and not parked.
func (s *slot[K, V]) hasItem() bool { return s.state&(pending|parked) == pending }

// markScheduled records new work: pending, not parked, no attempt made of it yet. A
// running attempt stays running.
func (s *slot[K, V]) markScheduled() { s.state = s.state&flagBits&^parked | pending }

// markCancelled records that no work is pending any more, parked or not.
func (s *slot[K, V]) markCancelled() { s.state &^= pending | parked }

// markParked records that the pending generation came due while the key was running.
func (s *slot[K, V]) markParked() { s.state |= parked }

// markUnparked records that the parked generation is back in the heap.
func (s *slot[K, V]) markUnparked() { s.state &^= parked }

// markClaimed records that a worker took the pending generation: running, not pending. It
// counts an attempt, unless the count has reached attemptCeiling, and reports whether it
// did.
func (s *slot[K, V]) markClaimed() (counted bool) {
	s.state = s.state&^pending | running
	if s.attempts() >= attemptCeiling {
		return false
	}
	s.state += attemptOne
	return true
}

// markPutBack undoes markClaimed, which reported counted: the claim was taken back before
// it started.
func (s *slot[K, V]) markPutBack(counted bool) {
	s.state = s.state&^running | pending
	if counted {
		s.state -= attemptOne
	}
}

// markFinished records that the running attempt has finished.
func (s *slot[K, V]) markFinished() { s.state &^= running }

// markRetrying records that the generation whose attempt failed waits to run again; its
// attempts so far stay counted.
func (s *slot[K, V]) markRetrying() { s.state |= pending }
