// Package clientgo runs taint eviction on client-go: [Controller], a drop-in for
// kube-controller-manager's taint eviction controller, and the pieces it is made of
// ([Informers], [InformerCache], [PodDeleter], [EvictionDeleter], [EventObserver],
// [EventWriter], [Reachability], [Handoff]), for a program that runs an
// [eviction.Manager] of its own.
//
//	factory := clientgo.NewFactory(client)
//	c, err := clientgo.NewController(ctx, client, factory, clientgo.Options{})
//	...
//	go http.ListenAndServe(":8080", c.Handler(nil)) // /healthz and /readyz
//	err = c.Run(ctx)                                 // until ctx is done
//
// [Options.Metrics] takes a [Meter], which [github.com/taintevict/taintevict/clientgo/metrics]
// keeps on a Prometheus registry; [Options.Elector] an [Elector], which
// [github.com/taintevict/taintevict/clientgo/lease] runs on a Lease. A Controller has one
// clock, the Manager's: see [Options].
//
// Errors are prefixed "clientgo:". A Deleter's error for a pod that is gone wraps
// [eviction.ErrPodGone]; a Forbidden error names what RBAC refused, e.g.
// "clientgo: forbidden: pods/eviction create (shop/web-1): ...".
package clientgo
