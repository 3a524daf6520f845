package eviction

import (
	v1 "k8s.io/api/core/v1"
)

// Cache is the caller's view of the cluster, usually informer listers. The [Manager] reads
// it, never writes it, and never changes the objects it returns.
//
// A lookup of something that does not exist returns either a nil object and a nil error, or
// an error for which k8s.io/apimachinery/pkg/api/errors.IsNotFound is true. Any other error
// is treated as passing: the work that needed the lookup is retried later.
//
// Its methods are called from several goroutines at once.
type Cache interface {
	// PodsOnNode returns the pods bound to the node (spec.nodeName == node).
	PodsOnNode(node string) ([]*v1.Pod, error)
	// Pod returns the pod, for the recheck right before a delete.
	Pod(namespace, name string) (*v1.Pod, error)
	// Node returns the node, for the recheck right before a delete.
	Node(name string) (*v1.Node, error)
}
