// Package e2e proves the controller on a real kube-apiserver and etcd, the ones that
// hack/kube-assets.sh builds: evictions with kube's condition and Events, deadlines kept
// across a restart and a leader failover, the UID precondition, PodDisruptionBudgets,
// least-privilege RBAC from the deploy/ manifests, and a run at scale.
//
// The package has only tests. They start one API server for the whole test binary and find
// its binaries in $KUBEBUILDER_ASSETS, else in the folder hack/kube-assets.sh builds into; a
// test binary that finds none fails and says to run `bash hack/kube-assets.sh`. There is no
// kubelet: a deleted pod stays Terminating, so the tests assert on its deletionTimestamp, its
// conditions and its Events.
//
//	go test -race ./e2e    # in examples/controller
package e2e
