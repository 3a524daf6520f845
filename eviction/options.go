package eviction

import "github.com/taintevict/taintevict/eviction/engine"

// Options configures a [Manager]; it is the engine's [engine.Options], whose zero value gives
// the documented defaults. For pods on nodes, the act workers are the Deleter's workers,
// ActTimeout bounds each Deleter call, and Tolerations takes kube's node rules (its zero
// value; set Tolerations.ComparisonOperators for Lt and Gt).
type Options = engine.Options

// DeadlineSource says where an eviction's countdown starts; see [engine.DeadlineSource].
type DeadlineSource = engine.DeadlineSource

const (
	// FromTimeAdded, the default: a taint's countdown starts at the earlier of its
	// TimeAdded and the time the taint was first seen on that node; see
	// [engine.FromTimeAdded].
	FromTimeAdded = engine.FromTimeAdded
	// FromObservation is kube-controller-manager's rule: the countdown starts when the
	// Manager first schedules the pod's eviction; see [engine.FromObservation].
	FromObservation = engine.FromObservation
)

// Limit is a token bucket; see [engine.Limit]. The zero Limit limits nothing.
type Limit = engine.Limit

// Brake pauses the evictions caused by a taint key while more than a fraction of the nodes
// (of the cluster, or of a zone: the topology.kubernetes.io/zone label) carry it; see
// [engine.Brake]. The zero Brake never pauses.
type Brake = engine.Brake

// Backoff paces retries; see [engine.Backoff].
type Backoff = engine.Backoff

// Pauser holds back evictions that are due by budgets of the caller's, until
// [Manager.Resume]; see [engine.Pauser].
type Pauser = engine.Pauser

// Pending is one open eviction that waits, as [Manager.Pending] reports it; see
// [engine.Pending].
type Pending = engine.Pending

// Stats counts a Manager's evictions by where they stand; see [engine.Stats].
type Stats = engine.Stats
