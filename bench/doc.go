// Package bench is the root of the side-by-side module: it measures taintevict against the
// code of Kubernetes itself (k8s.io/kubernetes/pkg/controller/tainteviction, v1.37.2), in
// the same benchmark binary or the same run, so that every ratio in BENCHMARKS.md can be
// reproduced with one command.
//
// The module is nested so that users of taintevict never see its dependencies: it needs
// k8s.io/kubernetes, whose go.mod requires its staging modules at v0.0.0, hence one replace
// per staging module in go.mod.
//
//   - queue: kube's TimedWorkerQueue against timedqueue (benchmarks).
//   - apparatus and outage: a zone outage fed to kube's controller and to taintevict's
//     drop-in controller, on one apparatus of informers and an API that answers at once;
//     cmd/sidebyside runs each side in a process of its own, at several sizes and several
//     times, prints the medians and ratios, and draws the picture (outage.svg).
//   - compat: one scenario table played against both controllers, outcome by outcome.
//   - realapiserver and cmd/realapiserver: the same outage on a real kube-apiserver and
//     etcd (hack/kube-assets.sh), kube's controller against taintevict's drop-in, each in
//     a process of its own with the same client budget, judged by the API server's audit
//     log; and the drop-in's time from start to ready with JSON and with protobuf.
//   - scale and cmd/scale: the same on a real control plane at Kubernetes' supported maximum
//     (5,000 nodes, 150,000 pods) or the largest size that fits: kube-controller-manager
//     itself against taintevict's command, the start, the steady state, a zone outage with
//     the brake, a restart and a Lease failover, the what-if, the informers' memory; a small
//     version (200 nodes, 6,000 pods) runs in CI and checks correctness from the audit log.
//   - devicetol: taintevict's device tolerations against kube's resourceclaim.ToleratesTaint
//     and device eviction rule, on random cases (tests only).
//
// The commands that produced the figures are in BENCHMARKS.md.
package bench
