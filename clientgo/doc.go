// Package clientgo runs the library's taint eviction on client-go. [Controller] is a
// drop-in for kube-controller-manager's taint eviction controller over a
// SharedInformerFactory and a clientset; the pieces it is made of serve a program that runs
// an [eviction.Manager] of its own. The command in examples/controller is a thin main on
// top of Controller.
//
//	factory := clientgo.NewFactory(client)
//	c, err := clientgo.NewController(ctx, client, factory, clientgo.Options{})
//	if err != nil {
//		return err
//	}
//	go http.ListenAndServe(":8080", c.Handler(nil)) // /healthz and /readyz
//	return c.Run(ctx)                                // until ctx is done
//
// # The pieces
//
//   - [NewInformers], [Informers.AddHandlers]: the pod and node informers, the
//     spec.nodeName index, event handlers that unwrap tombstones.
//   - [InformerCache]: the [eviction.Cache] over the informers' stores.
//   - [PodDeleter]: kube's way, the DisruptionTarget condition and then a DELETE, both
//     bound to the pod's UID. [EvictionDeleter]: the Eviction API, which honours
//     PodDisruptionBudgets.
//   - [EventObserver], [EventWriter]: kube's Events, written in order, none dropped for want of room.
//   - [Reachability]: whether the API server answers, for /readyz and to retry at once
//     the deletes that failed while it did not.
//   - [Handoff]: for a test on a fake clientset and a fake clock, a wait until the Manager
//     has done what the API server's state makes due ([Controller.WaitIdle]).
//
// # Metrics and leader election
//
// [Options.Metrics] takes a [Meter] and [Options.Elector] an [Elector], two interfaces that
// [github.com/taintevict/taintevict/clientgo/metrics] implements on a Prometheus registry
// and [github.com/taintevict/taintevict/clientgo/lease] on a coordination.k8s.io Lease. A
// program links Prometheus, or client-go's leader election, only if it imports those.
//
// # One clock
//
// A Controller tells the time with Options.Manager.Clock only (the real clock when nil):
// its Manager, Deleters, Events, metrics and Reachability probes. On a fake clock, the
// taints' TimeAdded must be of the fake clock's time line (see [Options]).
//
// # Errors
//
// Errors are prefixed "clientgo:". A Deleter's error for a pod that is gone wraps
// [eviction.ErrPodGone]; a Forbidden error names what RBAC refused, e.g.
// "clientgo: forbidden: pods/eviction create (shop/web-1): ...".
package clientgo
