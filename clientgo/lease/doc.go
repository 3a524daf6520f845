// Package lease is leader election on a coordination.k8s.io Lease, with client-go's
// leaderelection and kube-controller-manager's timings: the [clientgo.Elector] of a
// controller run as several replicas of which one evicts.
//
//	e, err := lease.New(client, lease.Options{Namespace: "kube-system"})
//	...
//	c, err := clientgo.NewController(ctx, client, factory, clientgo.Options{Elector: e})
//
// It is a package of its own so that a program that never elects does not link client-go's
// leader election. Errors are prefixed "lease:".
package lease
