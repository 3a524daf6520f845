package engine

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Holder is something that carries taints: a node, a device, a cluster. The [Engine] is
// told about holders with [Engine.HolderUpdated] and reads them from the [Source] right
// before it acts. The zero Holder has no name and no taints.
type Holder struct {
	// Name identifies the holder among the holders of one Engine.
	Name string
	// Taints are the holder's taints. The Engine reads only those with effect NoExecute and
	// never modifies the slice.
	Taints []v1.Taint
	// Group is the holder's zone or pool, for [Brake.ZoneFraction]: the brake counts the
	// holders of each group apart. Holders with an empty Group form one group.
	Group string
}

// Binding binds a target to one holder, with the tolerations that apply to that holder's
// taints: a pod tolerates its node with spec.tolerations; a pod that uses two devices
// tolerates each with the tolerations of the allocation that gave it that device. The
// slice is read, never modified.
type Binding struct {
	Holder      string
	Tolerations []v1.Toleration
}

// Target is what the Engine reads of a target object (a pod, a workload, a binding of a
// workload to clusters) through [Source.Describe].
type Target struct {
	// Key names the target; the Engine keeps at most one eviction per key.
	Key types.NamespacedName
	// UID identifies this incarnation of the target: a target re-created under the same key
	// has another UID, and the eviction of the old one never acts on it.
	UID types.UID
	// Leaving, when not empty, says why the target is on its way out on its own (for a pod:
	// it has finished, or it is being deleted). A leaving target is never acted on, and its
	// open eviction, if any, ends with [Observer.Skipped] and this reason.
	Leaving Reason
	// GoneBy is when a leaving target is to be gone at the latest (for a pod being deleted,
	// its deletionTimestamp: the end of its grace period); the zero time is not known. A
	// target acted on stops counting for [InFlight] once it is leaving and GoneBy has
	// passed, even if the Source still shows it: a holder that cannot confirm the removal
	// (a node that is unreachable) would otherwise hold its place for good.
	GoneBy time.Time
	// Bindings are the holders the target is bound to. A target with none is not evicted.
	Bindings []Binding
	// Owner is the workload the target belongs to, within its namespace: for a pod, its
	// controller (a ReplicaSet's Deployment, a StatefulSet, a DaemonSet, a Job). The
	// budgets per owner read it ([Options.OwnerLimit], [Options.LoopDamping]); the zero
	// Owner is none.
	Owner Owner
	// Created is when the target was created, for [Options.LoopDamping]; the zero time is
	// not known.
	Created time.Time
}

// Owner is the workload a target belongs to: its kind and name, within the target's
// namespace, as the [Source] says (for a pod, "Deployment" and its name). The zero Owner
// is none.
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

// Ref names a target to act on: the target, the incarnation (UID) that was due, and the
// holder whose taint made it due (the binding with the earliest deadline).
type Ref struct {
	Namespace string
	Name      string
	// UID is the UID of the target that was due. An actuator should send it as a
	// precondition, so that a target re-created under the same name is never acted on in
	// its place.
	UID types.UID
	// Holder is the holder whose taint the target does not tolerate (any longer).
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

// Source is the caller's view of the targets and holders, usually informer listers. The
// [Engine] reads it, level-triggered: an update only says that something about a target or a
// holder changed, and the Engine reads the current state from here, so updates that arrive
// late, out of order or coalesced lose nothing. It never writes the Source or the objects it
// returns.
//
// A lookup of something that does not exist returns found false and a nil error, or an
// error for which k8s.io/apimachinery/pkg/api/errors.IsNotFound is true. Any other error is
// treated as passing: the work that needed the lookup is retried later with backoff.
//
// Its methods are called from several goroutines at once, and must be safe for that.
type Source[T any] interface {
	// Target returns the target named key as it is now.
	Target(key types.NamespacedName) (target T, found bool, err error)
	// TargetsOn returns the targets bound to holder, for the Engine to decide again about
	// each when the holder's taints change.
	TargetsOn(holder string) ([]T, error)
	// Holder returns the holder named name as it is now, for the recheck right before the
	// Engine acts.
	Holder(name string) (holder Holder, found bool, err error)
	// Locate returns the key of t and the holder whose updates t's updates are to be
	// ordered after: its first binding's holder (a target with several bindings is
	// ordered after that one alone), "" for a target without bindings. The Engine hashes
	// targets onto its workers by that holder, so a Locate that returns "" for every
	// target puts them all on one worker. It is called for every [Engine.TargetUpdated],
	// so it must be cheap.
	Locate(t T) (key types.NamespacedName, holder string)
	// Describe fills d with what the Engine reads of t. d arrives reset: its fields zero,
	// and d.Bindings empty, with room the Engine reuses from call to call: append t's
	// bindings to it. Describe must not keep d or its slice.
	Describe(t T, d *Target)
}
