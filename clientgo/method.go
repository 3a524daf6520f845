package clientgo

import "github.com/taintevict/taintevict/eviction"

// Method says how a Deleter removed a pod.
type Method string

// The Methods of [PodDeleter] and [EvictionDeleter].
const (
	// MethodDelete: the DisruptionTarget status patch, then a DELETE ([PodDeleter]).
	MethodDelete Method = "delete"
	// MethodEvict: a policy/v1 Eviction ([EvictionDeleter]).
	MethodEvict Method = "evict"
	// MethodDeleteAfterPDBTimeout: PodDisruptionBudgets refused the Eviction for longer
	// than [EvictionDeleterOptions.PDBTimeout], and the pod was deleted as by [PodDeleter].
	MethodDeleteAfterPDBTimeout Method = "delete-after-pdb-timeout"
)

// DeleteObserver is told what a Deleter's calls find: that the pod is there to be removed
// (Found), and how a call ended the eviction (Removed). It is called before Delete returns
// (so before the Manager's Observer hears how the call ended), from several goroutines at
// once: implementations must be safe for concurrent use and return quickly.
type DeleteObserver interface {
	// Found: the call's first request found the pod, of the ref's UID and not being
	// deleted (the status patch answered with it; the Eviction went through, or a
	// PodDisruptionBudget refused it); at each call.
	Found(pod eviction.PodRef)
	// Removed: the call ended the eviction: the pod was removed (how), or found gone
	// already (gone true).
	Removed(pod eviction.PodRef, how Method, gone bool)
}

// DeleteObservers tells each of its observers; a nil or empty DeleteObservers tells no one.
type DeleteObservers []DeleteObserver

// Found tells each observer.
func (obs DeleteObservers) Found(pod eviction.PodRef) {
	for _, o := range obs {
		o.Found(pod)
	}
}

// Removed tells each observer.
func (obs DeleteObservers) Removed(pod eviction.PodRef, how Method, gone bool) {
	for _, o := range obs {
		o.Removed(pod, how, gone)
	}
}
