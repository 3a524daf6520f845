// Package taintevict is a library for timed, toleration-based eviction: Kubernetes' NoExecute
// taint eviction (a pod leaves a tainted node once its matching tolerations run out), taken
// out of kube-controller-manager so that any controller can import it, for pods on nodes,
// pods on DRA devices, workloads on clusters, or anything else that carries taints.
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
// The drop-in controller, on a clientset (the clientgo module):
//
//	c, err := clientgo.NewController(ctx, client, clientgo.NewFactory(client), clientgo.Options{})
//	if err != nil {
//		return err
//	}
//	return c.Run(ctx) // until ctx is done
//
// This package holds no code: its packages do.
//
// # Packages of this module
//
// Nothing in this module imports client-go: the caller owns the informers and the clients.
//
//   - [github.com/taintevict/taintevict/tolerations]: pure functions: which tolerations
//     match a node's or a device's taints, the minimum toleration time, the restart-safe
//     deadline of a pod, and validation as the API server does it.
//   - [github.com/taintevict/taintevict/timedqueue]: a generic, cancellable timed worker
//     queue with an injected clock, for a million pending items; nothing of Kubernetes.
//   - [github.com/taintevict/taintevict/eviction/engine]: the generic core: holders carry
//     taints, targets are bound to holders with tolerations, an Actuator acts on a target
//     when the earliest deadline over its bindings has come.
//   - [github.com/taintevict/taintevict/eviction]: the engine for pods on nodes, a Manager
//     that takes node and pod updates and calls a Deleter when a pod's time is up.
//   - [github.com/taintevict/taintevict/eviction/evictiontest]: in-memory stand-ins (a
//     Cache, a Source, a Deleter, an Observer that records) and the Observer contract's
//     check, for tests and simulations.
//   - [github.com/taintevict/taintevict/eviction/whatif]: what hypothetical taints would
//     evict, when and why, by running the engine itself on a simulated clock.
//
// # Packages of the clientgo module
//
//   - [github.com/taintevict/taintevict/clientgo]: the adapters to client-go: informers, a
//     Cache, kube's Deleter and an Eviction-API one, Events, and the drop-in Controller.
//   - [github.com/taintevict/taintevict/clientgo/device]: pods on tainted DRA devices, a
//     drop-in for kube's device-taint-eviction-controller.
//   - [github.com/taintevict/taintevict/clientgo/metrics]: kube's metrics and ours, on
//     Prometheus.
//   - [github.com/taintevict/taintevict/clientgo/lease]: leader election on a Lease.
//
// # The controllerruntime module
//
//   - [github.com/taintevict/taintevict/controllerruntime]: the node side inside a
//     controller-runtime manager, on its cache and under its leader election.
//
// # Programs
//
// Under examples/: outage (a zone outage simulated in memory: go run ./examples/outage),
// clusters (workloads moved off clusters that lose contact), controller (the command of
// the drop-in controller, with manifests) and kubectl-taintevict (the kubectl plugin:
// what-if and explain).
package taintevict
