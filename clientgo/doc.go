// Package clientgo runs taint eviction on client-go: [Controller], a drop-in for
// kube-controller-manager's taint eviction controller, and the pieces it is made of, for a
// program that runs an [eviction.Manager] of its own.
//
//	factory := clientgo.NewFactory(client)
//	c, err := clientgo.NewController(ctx, client, factory, clientgo.Options{})
//	...
//	go http.ListenAndServe(":8080", c.Handler(nil)) // /healthz and /readyz
//	err = c.Run(ctx)                                 // until ctx is done
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
//   - [Handoff]: for a test on a fake clientset and clock, a wait until the Manager has done
//     what is due ([Controller.WaitIdle]).
//
// # Metrics, leader election, clock
//
// [Options.Metrics] takes a [Meter], which [github.com/taintevict/taintevict/clientgo/metrics]
// keeps on a Prometheus registry; [Options.Elector] an [Elector], which
// [github.com/taintevict/taintevict/clientgo/lease] runs on a Lease. A Controller has one
// clock, the Manager's: see [Options].
//
// # Errors
//
// Errors are prefixed "clientgo:". A Deleter's error for a pod that is gone wraps
// [eviction.ErrPodGone]; a Forbidden error names what RBAC refused, e.g.
// "clientgo: forbidden: pods/eviction create (shop/web-1): ...".
package clientgo
