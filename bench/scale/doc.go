// Package scale runs kube's taint eviction against taintevict's at Kubernetes' supported
// maximum (5,000 nodes, 150,000 pods) or the largest size that fits the machine, on a real
// kube-apiserver and etcd (hack/kube-assets.sh), each side a process of its own with the
// same client budget: kube-controller-manager v1.37.2 itself on one side, taintevict's
// command (examples/controller) on the other, the API server's audit log the judge
// (bench/realapiserver reads it).
//
// The cluster is built once per size and kept as etcd's data folder ([LoadOrBuild]); each
// run starts a control plane on a copy of it ([Saved.Start]), so every side meets the same
// cluster: nodes in the three Zones with kube's labels, Leases and a kubelet's status;
// pods of ReplicaSets, StatefulSets and DaemonSets, with containers, env, probes, volumes
// and a running status, the DefaultTolerationSeconds admission plugin's tolerations (their
// seconds shortened by the API server's flags so that a run fits).
//
// A run ([Run]) measures, in order:
//   - the start: a few nodes of zone b are tainted out-of-service (no pod tolerates it)
//     before the side starts; the time from the process's start until its caches synced,
//     and until its first removal of one of their pods;
//   - the steady state: its resident set and its CPU over a quiet window, and the API
//     server's and etcd's; for taintevict, `kubectl taintevict what-if` of zone a;
//   - the outage: zone a's nodes marked Ready Unknown and tainted unreachable (NoExecute
//     with TimeAdded, and NoSchedule), as kube's node lifecycle controller does, all at once;
//     the first, median and last removal, the requests per eviction, the control plane's
//     CPU, and correctness: every due pod removed once, none before its deadline, no other
//     pod written to. Variants add the brake (taintevict's -brake-fraction, let go when a
//     few nodes come back), a restart (SIGKILL and start again) or a Lease failover to a
//     second replica midway.
//
// [MeasureInformers] measures the informer cache's memory per pod and per node, as kube and
// taintevict keep it and as a transform, a metadata-only informer or a field selector
// would. cmd/scale drives it all and prints the tables of BENCHMARKS.md.
package scale
