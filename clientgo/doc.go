// Package clientgo connects github.com/taintevict/taintevict/eviction to client-go: the
// pieces a controller author imports to run an eviction.Manager on a SharedInformerFactory,
// and a drop-in [Controller] made of them.
//
//   - [NewInformers] and [Informers.AddHandlers]: the pod and node informers, the
//     spec.nodeName index, and event handlers that unwrap tombstones;
//   - [InformerCache]: the eviction.Cache over the informers' stores;
//   - [PodDeleter]: kube's way (DisruptionTarget=True, then delete) in two API calls, both
//     bound to the pod's UID; [EvictionDeleter]: the policy/v1 Eviction API, so that
//     PodDisruptionBudgets are honoured, with an optional timeout after which it deletes;
//   - [EventObserver]: kube's Events, and one of ours when the brake pauses an eviction;
//     [EventWriter]: the recorder that writes them, in order, dropping none, through a
//     client (and rate limiter) of its own if given one;
//   - [Reachability]: whether the API server answers, from the outcomes of the client's own
//     requests, for a readiness probe and to retry the failed deletes when it answers again;
//     one serves every controller of the client (the device side's too);
//   - [Controller]: all of the above, with metrics ([Meter]) and leader election
//     ([Elector]) if given, and [Controller.Handler] for /healthz, /readyz and /metrics;
//   - [Handoff] ([Controller.WaitIdle] with [Options.WaitIdle]): for a test on a fake
//     clientset and a fake clock, a wait until the Manager has been handed what the API
//     server holds and has done what is due, which eviction.Manager.WaitIdle, knowing
//     nothing of the informers, cannot tell alone.
//
// Metrics and leader election live in packages of their own, so that only the programs
// that use them link them: github.com/taintevict/taintevict/clientgo/metrics keeps kube's
// metrics and ours on a Prometheus registry (its Meter is the [Meter] of both
// controllers), and github.com/taintevict/taintevict/clientgo/lease elects on a
// coordination.k8s.io Lease (its Elector is the [Elector] of both). This package imports
// neither Prometheus nor client-go's leader election.
//
// A Controller has one clock, Options.Manager.Clock (the device side's,
// Options.Engine.Clock): the Manager's, the Deleters', the Events', the metrics' and that of
// the Reachability's probes. On a fake clock, the taints' TimeAdded must be of the fake
// clock's time line (see [Options]).
//
// The packages are the module github.com/taintevict/taintevict/clientgo, nested in the
// library's repository, so that the library's own module never depends on client-go or
// Prometheus, and so that this one depends on nothing that only the command, its manifests
// or its end-to-end tests need. The command in examples/controller is a thin main on top of
// [Controller].
//
// Errors are prefixed "clientgo:". A Deleter's error for a pod that is gone wraps
// eviction.ErrPodGone; a Forbidden error names what RBAC refused, e.g.
// "clientgo: forbidden: pods/eviction create (shop/web-1): ...".
package clientgo
