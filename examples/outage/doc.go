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
// A second scenario runs the same kind of partition with Options.Brake.ZoneFraction 0.5:
// zone-a's three nodes are cut off at +00:00, so more than half of zone-a carries the taint
// and the evictions it causes wait (reported Delayed, Paused, and listed as pending with the
// time they fell due), while a node of zone-b that fails at +00:30 is evicted from as usual.
// At +04:00 two of zone-a's nodes come back: their pods stay, and the brake releases what
// fell due meanwhile on the third.
//
// Three more show the budgets kube's controller does not have. Under caps (Options.InFlight,
// Options.NamespaceLimit), a pod taking 30 s to terminate counts as in flight until it is
// gone, and a namespace goes at most 2 a minute. A small zone (Options.Brake.ZoneHolders,
// Brake.FullDisruption) is held at 2 of its 3 nodes, and once fully down goes at a rate of
// its own. A maintenance taint put on every node by mistake (Options.Confirm) is held until
// an operator confirms it on a node with the taintevict.io/confirm-eviction annotation, or
// until it would evict few enough; a DaemonSet that puts its pod back on a node being
// drained waits 30 s, then 60 s (Options.LoopDamping).
//
// Time is a fake clock moved in 10-second steps, so six simulated minutes take well under a
// second. After every step the program waits with Manager.WaitIdle until the Manager has
// done everything the step caused, then prints: the output is the same on every run.
package main
