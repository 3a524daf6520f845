// Command kubectl-taintevict is a kubectl plugin that tells, before anyone taints a node,
// what the taint would do, and, for a pod, why it will or will not be evicted:
//
//	kubectl taintevict what-if node/NAME KEY[=VALUE]:NoExecute
//	kubectl taintevict what-if -l topology.kubernetes.io/zone=a
//	kubectl taintevict explain pod/NAME
//
// It simulates with the library's engine itself (package
// github.com/taintevict/taintevict/eviction/whatif): the engine of the drop-in controller
// (examples/controller), in dry run, on a fake clock stepped to each deadline, over the
// nodes and pods it lists from the cluster. Installed on the PATH, kubectl finds it as
// "kubectl taintevict":
//
//	go install github.com/taintevict/taintevict/examples/kubectl-taintevict@v0.1.0
//
// It takes kubectl's flags for the cluster (--kubeconfig, --context, -n, and the rest; see
// "kubectl taintevict options") and -o json or -o yaml for scripts.
//
// Exit codes: 0 when the question was answered; 1 when the cluster could not answer (the
// API server cannot be reached, RBAC forbids a list, a node or a pod is not found); 2 for a
// command line that is wrong (an unknown flag, a malformed taint, an effect other than
// NoExecute, which evicts nothing).
//
// The commands are what-if (whatif.go; devices.go for DRA devices) and explain
// (explain.go; controller.go asks the controller); the report and its output are report.go
// and print.go.
package main
