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
// The controller under test is the command of examples/controller, built by the test and run
// as a process with -kubeconfig, as users run it: it is stopped with SIGTERM, crashed with
// SIGKILL, and told apart from other replicas by the API server's audit log, which records
// every request of the users the controllers run as. A proxy between a controller and the
// server forces races.
//
// The scenarios of the issue, by test:
//
//   - 1 to 5: TestEvictUntolerated, TestEvictAtTolerationDeadline, TestUntaintCancels,
//     TestNeverEvicted, TestRecreatedPodIsNotDeleted;
//   - 6: TestEvictionRespectsBudget and TestEvictionBudgetTimeout;
//   - 7 and 8: TestRestartKeepsDeadline, TestLeaderFailover and TestLeaderPartitioned;
//   - 9 to 11: TestLeastPrivilege, TestManifestsPassServerValidation, TestScale (which
//     also checks that every Event of its 2,000 pods arrives);
//   - issue 38: TestHelmChart (the Helm chart, ../chart, installed by helm on the server; the
//     command run with its Deployment's args as its ServiceAccount evicts);
//   - issue 22: TestFlowSchema (the FlowSchema of deploy/ puts the controller at the API
//     server's priority level workload-high, as each response's header says);
//   - issue 20, faults: TestKilledMidDelete (SIGKILL between the status patch and the DELETE),
//     and behind -e2e.slow TestAPIServerDown, TestEtcdStall and TestWatchCompacted (on a
//     control plane of their own, faultplane_test.go, which they kill, pause and compact; the
//     first with -controllers=device too) and
//     TestLoadWhileFailing (a proxy refuses 30% of the pod writes); each is tallied from the
//     audit log: evictions lost, wrong and doubled;
//   - issue 20, the metrics port: TestMetricsSecure (HTTPS; 401 without a token, 403 without
//     the right, kube's metric names with it); issue 28: TestDeviceMetricsSecure (kube's
//     device metric names and ours with controller="device" through the same port, alone
//     and with -controllers=node,device);
//   - issue 20, bad input from the cluster: the TestBadInput tests (objects written into etcd
//     as a server of another version would have left them, skewed TimeAdded, 1,000
//     tolerations, 100 taints, a DeviceTaintRule with an empty selector);
//   - issue 29, know before you taint: TestWhatIfPredicts (kubectl-taintevict what-if on
//     the 100 × 20 cluster predicts, pod by pod and to the second, the deadlines the
//     controller then holds, as its /debug/pending says, and the pods it deletes and
//     leaves), TestExplainAgrees (explain of each kind of pod agrees with what happens; the
//     controller's side asked at its port and through the API server's service proxy),
//     TestWebhookWarns (the admission webhook's warning reaches a client-go WarningHandler,
//     for a node taint and a DeviceTaintRule), TestWebhookDenies (the deny guard and its
//     override annotation) and TestWebhookDownNeverBlocks (failurePolicy Ignore, measured
//     with nothing listening and with a webhook that never answers), with deploy/webhook's
//     configuration and deploy/explain.yaml's rules.
//
// Issue 30, budgets against mass eviction, each tallied from the audit log:
// TestZoneOutageCaps (a zone outage under -namespace-limit and -in-flight, with pods that
// take 3 s to terminate: deadline order, never more than the caps allow, at the pace they
// allow) and TestDeviceConfirm (a DeviceTaintRule that selects every device, held by
// -confirm-fraction until its annotation is set, then every pod evicted once).
//
// Issue 36, the budgets where they are needed, each tallied from the audit log (lost,
// wrong, doubled, and no write while a budget holds), in safety_test.go:
// TestBrakeHoldsAcrossRestart and TestBrakeHoldsAcrossFailover (a zone outage the brake
// holds; once the taints are older than the tolerations, the controller is SIGKILLed and a
// new one started, or the Lease fails over: no write to a pod until the brake lets go),
// TestInFlightUnreachable (-in-flight with pods that stay Terminating on unreachable
// nodes: every pod goes, a grace period apart, as the what-if predicted),
// TestEvictModeUnderAPF (-mode=evict -pdb-timeout under a FlowSchema and a priority
// level that reject the controller's evictions: no DELETE before -pdb-timeout of the
// PodDisruptionBudget's own refusals) and TestExplainUntimedTaint (explain of a taint
// without TimeAdded gives the controller's deadline, which the controller keeps).
//
// README.md here tabulates the faults and the budgets: what the controller promises, what
// the last run measured.
//
// The device side's (issue 19), with -controllers=device, in device_test.go: at once
// (with kube's device condition and Event, in two requests, no GET), at TimeAdded + N and
// kept forever, a rule added later evicts and one deleted first cancels, the rules'
// EvictionInProgress status, a pod on two devices at the earlier deadline and a claim
// reserved for another pod, and a restart that keeps the deadline; TestLeastPrivilege runs
// two of them with -controllers=node,device as the service account of deploy/ and
// deploy/device/.
// TestDevicePodGroup (issue 28): a claim reserved for a PodGroup evicts the group's pods that
// use it and a None rule counts them, on a control plane of its own whose kube-apiserver
// serves PodGroups (GenericWorkload, DRAWorkloadResourceClaims,
// --runtime-config=scheduling.k8s.io/v1beta1=true); the suite's server drops a pod's
// spec.schedulingGroup. The API server needs no flag for the others: in v1.37 resource.k8s.io/v1 serves ResourceSlices,
// ResourceClaims and DeviceTaintRules, and the DRADeviceTaints and DRADeviceTaintRules
// gates are on by default. No scheduler or driver runs: the tests write each claim's
// status.allocation and status.reservedFor themselves.
//
// Run it alone, in examples/controller, with: go test -race ./e2e (add -args -e2e.slow for
// the slow scenarios, as CI does)
package e2e
