// Command clusters simulates a multi-cluster controller that moves workloads off clusters
// that lose contact, on the generic eviction engine, with no Kubernetes client at all, and
// prints what it decides, and when, as a timeline.
//
//	go run ./examples/clusters
//
// It is the engine's third instantiation, beside pods on nodes (eviction.Manager) and pods
// on devices: the holders are clusters, tainted cluster.example.com/unreachable:NoExecute
// when they lose contact (as Karmada and Open Cluster Management taint theirs); the targets
// are workloads placed on a cluster, each with its own tolerations of that taint; and the
// actuator moves a workload to a healthy cluster, preferably of the same region, instead of
// deleting it. A workload that tolerates nothing moves at once; one that tolerates the
// outage for N seconds moves at the taint's TimeAdded plus N; one that tolerates it forever
// stays; and when the cluster recovers first, the workloads still on it keep their place.
// The workloads of one application (the engine's Target.Owner) move at most one a minute
// (engine.Options.OwnerLimit): when a second region goes down, the application's second
// workload waits for its turn, reported Delayed OwnerLimit.
//
// The fleet (fleet.go) is the engine's Source, over an in-memory table of clusters and
// workloads; the program updates it and then tells the engine, as informers would. Time is a
// fake clock moved in 10-second steps; after each step the program waits with
// Engine.WaitIdle, so the output is the same on every run.
package main
