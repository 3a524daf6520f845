package engine

// Reason says why an eviction was cancelled or skipped, or why a due one waits.
type Reason string

// Reasons given to [Observer.Cancelled]; a [Source] gives its own for a target that is
// leaving ([Target.Leaving]), which come to [Observer.Skipped].
const (
	// ReasonNotTainted: no known holder of the target carries a NoExecute taint.
	ReasonNotTainted Reason = "NotTainted"
	// ReasonTolerated: the target tolerates every NoExecute taint of its holders forever.
	ReasonTolerated Reason = "Tolerated"
	// ReasonHolderDeleted: the holder whose taint made the target due was deleted.
	ReasonHolderDeleted Reason = "HolderDeleted"
	// ReasonTargetDeleted: the target was deleted.
	ReasonTargetDeleted Reason = "TargetDeleted"
	// ReasonUnbound: the target is no longer bound to any holder.
	ReasonUnbound Reason = "Unbound"
	// ReasonReplaced: a target of the same key but another UID stands in the Source.
	ReasonReplaced Reason = "Replaced"
)

// Reasons given to [Observer.Delayed]: what a due eviction waits for.
const (
	// ReasonRateLimited: a token of [Options.RateLimit] or of TaintRateLimits.
	ReasonRateLimited Reason = "RateLimited"
	// ReasonPaused: the end of the [Brake]'s pause of a taint that makes it due.
	ReasonPaused Reason = "Paused"
	// ReasonInFlight: an eviction in flight to end ([InFlight]).
	ReasonInFlight Reason = "InFlight"
	// ReasonNamespaceLimit: its namespace's [Window] to open.
	ReasonNamespaceLimit Reason = "NamespaceLimit"
	// ReasonOwnerLimit: its owner's [Window] to open.
	ReasonOwnerLimit Reason = "OwnerLimit"
	// ReasonRecreated: its [LoopDamping] backoff, as a re-created target of an owner.
	ReasonRecreated Reason = "Recreated"
	// ReasonUnconfirmed: an operator to confirm a taint that would evict too many ([Confirm]).
	ReasonUnconfirmed Reason = "Unconfirmed"
	// ReasonNotSynced: [Engine.Synced], with a Brake or Confirm.
	ReasonNotSynced Reason = "NotSynced"
)
