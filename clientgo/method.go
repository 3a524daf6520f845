package clientgo

import "github.com/taintevict/taintevict/eviction"

// Method says how a Deleter removed a pod.
type Method string

// The Methods of [PodDeleter] and [EvictionDeleter].
const (
	// MethodDelete: the DisruptionTarget status patch, then a DELETE with a UID
	// precondition ([PodDeleter]).
	MethodDelete Method = "delete"
	// MethodEvict: a policy/v1 Eviction, which honours PodDisruptionBudgets
	// ([EvictionDeleter]).
	MethodEvict Method = "evict"
	// MethodDeleteAfterPDBTimeout: PodDisruptionBudgets refused the Eviction for longer
	// than [EvictionDeleterOptions.PDBTimeout], and the pod was deleted as by [PodDeleter].
	MethodDeleteAfterPDBTimeout Method = "delete-after-pdb-timeout"
)

// DeleteObserver is told how a Deleter's call ended when it ended the eviction: the pod was
// removed, or found gone already (gone true). It is called from the Deleter, before Delete
// returns (so before the Manager's Observer hears Succeeded), from several goroutines at
// once: implementations must be safe for concurrent use and return quickly. Package
// clientgo/metrics' Metrics implements it, to count evictions by method.
type DeleteObserver interface {
	Removed(pod eviction.PodRef, how Method, gone bool)
}

// DeleteObservers tells each of its observers; a nil or empty DeleteObservers tells no one.
type DeleteObservers []DeleteObserver

// Removed tells each observer.
func (obs DeleteObservers) Removed(pod eviction.PodRef, how Method, gone bool) {
	for _, o := range obs {
		o.Removed(pod, how, gone)
	}
}
