package engine

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Holder is something that carries taints: a node, a device, a cluster. The zero Holder
// has no name and no taints.
type Holder struct {
	// Name identifies the holder among the holders of one Engine.
	Name string
	// Taints are its taints, of which the Engine reads those with effect NoExecute; it never
	// modifies the slice.
	Taints []v1.Taint
	// Group is its zone or pool, for the [Brake]'s counts per group; holders with an empty
	// Group form one group.
	Group string
}

// Binding binds a target to one holder, with the tolerations that apply to its taints. The
// slice is read, never modified.
type Binding struct {
	Holder      string
	Tolerations []v1.Toleration
}

// Target is what the Engine reads of a target object (a pod, a workload) through
// [Source.Describe].
type Target struct {
	// Key names the target; the Engine keeps at most one eviction per key.
	Key types.NamespacedName
	// UID identifies this incarnation: the eviction of a target never acts on one
	// re-created under its key.
	UID types.UID
	// Leaving, when not empty, says why the target is on its way out on its own: it is never
	// acted on, and its open eviction ends with [Observer.Skipped] and this reason.
	Leaving Reason
	// GoneBy is when a leaving target is to be gone at the latest (a pod's
	// deletionTimestamp); the zero time is not known. It ends its count for [InFlight].
	GoneBy time.Time
	// Bindings are the holders the target is bound to; with none, it is not evicted.
	Bindings []Binding
	// Owner is the workload the target belongs to, for [Options.OwnerLimit] and
	// [Options.LoopDamping].
	Owner Owner
	// Created is when the target was created, for [Options.LoopDamping]; the zero time is
	// not known.
	Created time.Time
}

// Owner is a workload: its kind and name, within the target's namespace (for a pod,
// "Deployment" and its name). The zero Owner is none.
type Owner struct {
	Kind, Name string
}

// String returns "Kind/Name", or "" for none.
func (o Owner) String() string {
	if o == (Owner{}) {
		return ""
	}
	return o.Kind + "/" + o.Name
}

// Ref names a target to act on.
type Ref struct {
	Namespace string
	Name      string
	// UID is that of the target that was due: an actuator should send it as a precondition.
	UID types.UID
	// Holder is the holder whose taint made it due (the binding with the earliest deadline).
	Holder string
}

// Key returns the target's key, as [Target.Key] and [Source.Target] name it.
func (r Ref) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
}

// String returns "namespace/name", or "name" for a target without a namespace.
func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// Source is the caller's view of the targets and holders, usually informer listers. An
// update only says that something changed; the [Engine] reads the current state here, and
// never writes it or the objects it returns.
//
// A lookup of something that does not exist returns found false and a nil error, or a
// NotFound error (k8s.io/apimachinery/pkg/api/errors.IsNotFound). Any other error fails
// the work that needed it, retried with backoff. The methods must be safe for concurrent use.
type Source[T any] interface {
	// Target returns the target named key as it is now.
	Target(key types.NamespacedName) (target T, found bool, err error)
	// TargetsOn returns the targets bound to holder, decided again when its taints change.
	TargetsOn(holder string) ([]T, error)
	// Holder returns the holder named name as it is now, for the recheck.
	Holder(name string) (holder Holder, found bool, err error)
	// Locate returns the key of t and the holder whose updates t's are ordered after: its
	// first binding's, "" for none (all on one worker). It is called for every
	// [Engine.TargetUpdated], so it must be cheap.
	Locate(t T) (key types.NamespacedName, holder string)
	// Describe fills d with what the Engine reads of t. d arrives zero but for d.Bindings,
	// empty with room reused: append t's bindings to it. It must not keep d or its slice.
	Describe(t T, d *Target)
}

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
