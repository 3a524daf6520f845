package engine

// Reason says why an eviction was cancelled or skipped, or why a due one waits.
type Reason string

// Reasons given to [Observer.Cancelled]. A [Source] gives its own reasons for a target that
// is leaving ([Target.Leaving]); those come to [Observer.Skipped].
const (
	// ReasonNotTainted: none of the target's holders carries a NoExecute taint (any more),
	// or they are not known.
	ReasonNotTainted Reason = "NotTainted"
	// ReasonTolerated: the target tolerates every NoExecute taint of its holders forever.
	ReasonTolerated Reason = "Tolerated"
	// ReasonHolderDeleted: the holder whose taint made the target due was deleted, and no
	// other holder makes it due.
	ReasonHolderDeleted Reason = "HolderDeleted"
	// ReasonTargetDeleted: the target was deleted.
	ReasonTargetDeleted Reason = "TargetDeleted"
	// ReasonUnbound: the target is no longer bound to any holder.
	ReasonUnbound Reason = "Unbound"
	// ReasonReplaced: a target of the same key but another UID stands in the Source.
	ReasonReplaced Reason = "Replaced"
)

// Reasons given to [Observer.Delayed]: why an eviction that is due waits.
const (
	// ReasonRateLimited: the eviction waits for a token of Options.RateLimit, or of the
	// TaintRateLimits of a taint that makes it due.
	ReasonRateLimited Reason = "RateLimited"
	// ReasonPaused: the eviction waits because Options.Brake paused the evictions caused by
	// a taint that makes it due.
	ReasonPaused Reason = "Paused"
	// ReasonInFlight: the eviction waits for one of the evictions in flight to end
	// (Options.InFlight).
	ReasonInFlight Reason = "InFlight"
	// ReasonNamespaceLimit: the eviction waits for its namespace's window to open
	// (Options.NamespaceLimit).
	ReasonNamespaceLimit Reason = "NamespaceLimit"
	// ReasonOwnerLimit: the eviction waits for its owner's window to open
	// (Options.OwnerLimit).
	ReasonOwnerLimit Reason = "OwnerLimit"
	// ReasonRecreated: the target was re-created under an owner evicted a moment ago, and
	// waits its backoff (Options.LoopDamping).
	ReasonRecreated Reason = "Recreated"
	// ReasonUnconfirmed: the taint that makes the eviction due would evict too many targets
	// at once, and waits for an operator's confirmation (Options.Confirm).
	ReasonUnconfirmed Reason = "Unconfirmed"
	// ReasonNotSynced: the Engine, which has a Brake or Confirm, waits to be told that it
	// knows every holder and target ([Engine.Synced]).
	ReasonNotSynced Reason = "NotSynced"
)
