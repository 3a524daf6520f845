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
//   - outage: a zone outage fed to kube's controller and to the eviction Manager, on one
//     apparatus of informers and an API that answers at once; cmd/outage runs one side in
//     a process of its own, cmd/sidebyside runs both at several sizes and draws the picture.
//   - compat: one scenario table played against both controllers, outcome by outcome.
package bench
