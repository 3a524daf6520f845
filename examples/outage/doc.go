// Command outage simulates a zone outage in a small in-memory cluster and prints, as a
// timeline, what an eviction.Manager decides and when.
//
//	go run ./examples/outage
//
// The cluster has five nodes in two zones and pods with different tolerations of
// node.kubernetes.io/unreachable:NoExecute, the taint Kubernetes puts on a node it has lost
// contact with. At +00:00 zone-a goes dark and its three nodes get that taint; at +02:00
// one of them comes back and the taint is removed. The program drives the Manager as an
// informer would: it updates an in-memory cache (evictiontest.Cache) and then calls
// NodeUpdated or PodUpdated. The Deleter removes the pod from the cache and reports the
// deletion, as the API server and the informer would.
//
// Time is a fake clock moved in 10-second steps, so six simulated minutes take well under a
// second. After every step the program waits with Manager.WaitIdle until the Manager has
// done everything the step caused, then prints: the output is the same on every run.
package main
