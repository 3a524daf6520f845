// Package realapiserver measures a mass eviction on a real kube-apiserver and etcd, the
// ones hack/kube-assets.sh builds, with kube's own taint eviction controller
// (k8s.io/kubernetes/pkg/controller/tainteviction) on one side and taintevict's drop-in
// (the clientgo module's Controller) on the other, each in a process of its own, with the
// same client budget, on a fresh control plane for each run. The API server's audit log is
// the judge: it gives each request's verb, object, user, code and times, and each side runs
// as a user of its own.
//
// A run builds the cluster (nodes × pods, half of each node's pods tolerating the taint
// example.com/down for a while, the other half tolerating nothing), starts the side, waits
// for its caches, taints every node at once, and waits until every untolerating pod is
// removed and every Event written. [Measure] reads from the audit log the times of the
// first, median and last removal after the first taint, the requests per eviction by verb,
// the Events written before the last removal, and the correctness (each untolerating pod
// removed once, no tolerating pod touched); the API server's and etcd's CPU time over the
// run comes from /proc. cmd/realapiserver drives the runs and prints the tables.
//
// A third kind of side, the flood, runs no controller: it sends taintevict's removal
// requests (its own Deleter's) for every untolerating pod as soon as the pod's node is
// tainted, a fixed number at once, with no client rate limit. Its rate of removal requests
// is the API server's capacity for them on this machine, measured in the same series of
// runs as the controllers, and the report gives each side's rate against it.
//
// Each side runs as a service account's user name (a client certificate), so that API
// Priority and Fairness treats it as in a cluster: kube's controller as
// kube-system/taint-eviction-controller (kube-controller-manager's
// --use-service-account-credentials), which the bootstrap FlowSchema
// kube-system-service-accounts serves at workload-high; taintevict's as the service account
// of examples/controller/deploy, whose FlowSchema, applied from its file, does the same.
package realapiserver
