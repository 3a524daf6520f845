// Package taintevict is a library for timed, toleration-based eviction: the logic by which
// Kubernetes evicts pods from nodes that carry NoExecute taints, taken out of
// kube-controller-manager so that any controller can import it.
//
// Kubernetes evicts a pod from a node with a NoExecute taint unless the pod tolerates the
// taint, and then only after the smallest tolerationSeconds of the tolerations that match.
// kube-controller-manager's implementation (pkg/controller/tainteviction) cannot be reused:
// it hard-codes a clientset Delete, real time and one timer per pod; it restarts every
// countdown when the controller restarts; it drops an eviction after five quick failures;
// and it never moves a deadline once scheduled. This module is for the authors of
// controllers that need the same behaviour (multi-cluster schedulers, edge node managers,
// device-taint controllers, simulators) without those limits.
//
// # Packages
//
//   - [github.com/taintevict/taintevict/tolerations]: pure functions. The NoExecute taints
//     of a node, which tolerations match them, the minimum toleration time, the eviction
//     deadline of a pod computed from each taint's TimeAdded (so that a restart changes
//     nothing), and validation as the API server does it.
//   - [github.com/taintevict/taintevict/timedqueue]: a generic, cancellable timed worker
//     queue with an injected clock, a bounded worker pool and retries, built to hold a
//     million pending items. It knows nothing of Kubernetes.
//   - [github.com/taintevict/taintevict/eviction/engine]: the generic core. Holders carry
//     taints (nodes, DRA devices, clusters); targets are bound to one or more holders, each
//     binding with its own tolerations; an Actuator acts on a target when the earliest
//     deadline over its bindings has come (delete, evict, migrate, move). No informers,
//     clients or real time inside.
//   - [github.com/taintevict/taintevict/eviction]: the engine's instantiation for pods on
//     nodes, a Manager that takes node and pod updates (no informers inside), keeps the
//     schedule, and calls a pluggable Deleter when a pod's time is up.
//   - github.com/taintevict/taintevict/clientgo, a module of its own: the adapters to
//     client-go (the informers, the Cache, the Deleters, Events and Prometheus metrics, and
//     a drop-in Controller with leader election).
//   - examples/: runnable programs. examples/outage simulates a zone outage in memory;
//     examples/clusters moves workloads off clusters that lose contact, on the engine;
//     examples/controller, a module of its own, is the command of a drop-in replacement for
//     kube's taint eviction controller (leader election, metrics, the Eviction API as an
//     option, manifests), built on the clientgo module. It runs on an in-memory cluster by
//     default and on a real one with -kubeconfig.
//
// Nothing in this module imports client-go: the caller owns informers and clients, and
// imports the clientgo module's package for the wiring.
//
// # Quick start
//
// The deadline of one pod on one node, as a pure function:
//
//	e := tolerations.Deadline(node.Spec.Taints, pod.Spec.Tolerations, now, time.Time{}, tolerations.Options{})
//	switch e.Verdict {
//	case tolerations.Stay: // never evicted
//	case tolerations.EvictNow: // evict at once
//	case tolerations.EvictAt: // evict at e.At
//	}
//
// A controller that evicts, fed from informer event handlers:
//
//	m, err := eviction.New(deleter, cache, eviction.Options{Observer: observer})
//	if err != nil {
//		return err
//	}
//	// in the handlers: m.NodeUpdated(oldNode, newNode) and m.PodUpdated(oldPod, newPod),
//	// with old nil for an add and new nil for a delete.
//	return m.Run(ctx) // until ctx is done
//
// Here deleter implements [github.com/taintevict/taintevict/eviction.Deleter] (one method,
// called when a pod's time is up; clientgo.NewPodDeleter is kube's), cache implements
// [github.com/taintevict/taintevict/eviction.Cache] over the informers' stores, and observer,
// optional, turns decisions into Events and metrics. Run go run ./examples/outage for a
// simulated zone outage.
package taintevict
