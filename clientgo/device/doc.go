// Package device evicts pods from tainted DRA devices: a drop-in for kube-controller-manager's
// device-taint-eviction-controller (pkg/controller/devicetainteviction), built on the
// generic engine (github.com/taintevict/taintevict/eviction/engine), for a DRA driver or a
// controller to embed, or for the command in examples/controller to run
// (-controllers=device).
//
// The model, as in kube:
//
//   - The holders are devices, named "driver/pool/device" ([ID]). A device's taints are
//     those of its entry in its pool's ResourceSlices of the newest generation, then those
//     of every DeviceTaintRule whose selector selects it (a rule without a selector selects
//     nothing; an empty one selects every device). Only NoExecute taints evict; a rule of
//     effect None evicts nothing, and its status says what it would evict.
//   - The targets are pods. A scheduled pod is bound to every device allocated to every
//     ResourceClaim it uses (resourceclaim.PodClaims: spec.resourceClaims, the claims made
//     from templates named in status.resourceClaimStatuses, the extended-resource claim) that
//     is reserved for it (resourceclaim.IsReservedForPod; a claim made from a template must
//     be made for it, resourceclaim.IsForPod), with the tolerations of the allocation result
//     that gave it that device (tolerations.DeviceTolerations, under
//     tolerations.DeviceRules).
//   - A pod goes at the earliest deadline over its bindings: a taint's TimeAdded plus the
//     smallest matching tolerationSeconds, at once for a taint it does not tolerate, never
//     for one it tolerates without tolerationSeconds. Removing the taint, the rule, or the
//     allocation or reservation cancels. These are the engine's rules, with its fixes (see
//     Differences from kube): a restart keeps the deadlines, a TimeAdded in the future
//     counts from first sight, a finished or terminating pod is never evicted, a failed
//     delete is retried until it succeeds.
//
// The pieces: [NewInformers] (pods, ResourceClaims, ResourceSlices, DeviceTaintRules, with
// the indexes [ClaimIndex], [DeviceIndex] and [PoolIndex], so that the pods on a device are
// two index lookups away); [Source], the engine's view of them, whose AddHandlers feeds the
// engine; [Events], kube's Events; the census of what each rule would evict, for the
// engine's Confirm (the guard against kubernetes#141422, an empty selector that evicted
// every pod on a device); and
// [Controller], all of them with clientgo's deleters (kube's DisruptionTarget condition
// [DisruptionReason], then a DELETE with a UID precondition: two requests where kube makes
// three; or the Eviction API), the DeviceTaintRules' EvictionInProgress condition as kube
// writes it (see The rules' status), metrics, leader election, and a clientgo.Reachability
// (readiness while the API server does not answer, the failed deletes retried at once when
// it does), which may be the node side's too.
//
// # Metrics
//
// With Options.Metrics (package clientgo/metrics' Meter), the controller keeps kube's two
// metrics under kube's names, help texts and buckets ([KubeMetrics]):
// device_taint_eviction_controller_pod_deletions_total and
// device_taint_eviction_controller_pod_deletion_duration_seconds, from each pod's deadline to
// its DELETE's answer (a pod found gone is not counted, as in kube); and taintevict's own
// (outcomes, delays, pending evictions, lateness, delete workers) with the label
// controller="device". The node side's Metrics may share the registry: the command's
// -controllers=node,device serves both on one /metrics.
//
// # PodGroups
//
// With kube's DRAWorkloadResourceClaims gate, the scheduler may reserve a claim for a
// PodGroup (scheduling.k8s.io) rather than for each pod: status.reservedFor names the group,
// and the pods whose spec.schedulingGroup.podGroupName is that group use it. Kube's
// controller, with the gate on, binds those pods that use the claim (by name, or as made from
// a template for the group and named in their status), evicts them, and counts them in the
// rules' status; with the gate off (its default in v1.37) it ignores such reservations.
// [Options.PodGroups] says which: by default ([PodGroupsAuto]) the controller follows them
// when the API server serves PodGroups, as discovery says when it starts to lead. A server
// that does not (GenericWorkload off, or scheduling.k8s.io/v1beta1 not in its
// --runtime-config) drops spec.schedulingGroup from the pods it stores, so no pod can be
// bound through a group there; the reservations left from a time it did are then ignored, as
// kube does with its gate off.
//
// # The rules' status
//
// Each DeviceTaintRule's EvictionInProgress condition has kube's reasons and messages, and
// is written at kube's times: at once for a new rule, a changed spec, and every rule when the
// controller starts to lead, counted before the engine hears of the change (so before any
// eviction it makes); a period (10 s, Options.StatusPeriod) after each eviction it counts
// for, and after each change of a pod that the rule makes due or of its claims; at most once
// a period for a generation. Completed is thus written a period after the last eviction, as
// kube writes it (63 s into kube's TestDeviceTaintRule/slow, whose DELETE returns at 53 s).
//
// It used to be written on a cadence of its own, every period from the start, whatever
// happened: Completed came anywhere between 0 and a period after the last eviction. Kube's
// way was chosen: an operator reads the same status at the same times after switching over;
// a status written a period after the last eviction is one that a burst of evictions
// staggered by a few seconds does not interrupt; an idle controller counts nothing, where
// the cadence counted every rule's pods every period; and a write never races with an
// eviction of the same instant (a test found one written twice). A rule that Confirm starts
// or stops holding is written at once.
//
// # Holding a rule until it is confirmed
//
// With engine.Options.Confirm (the command's -confirm-fraction), a DeviceTaintRule, or the
// NoExecute taints of one pool's ResourceSlices, that would evict more than a fraction of
// the pods that use devices is held (kubernetes#141422: a rule with an empty selector
// evicts every such pod): its evictions wait, reported Delayed with
// engine.ReasonUnconfirmed (an Event on each pod, [ConfirmMessage]), and the rule's status
// says EvictionPaused, with the counts and the annotation that confirms it, until an
// operator sets eviction.ConfirmAnnotation on the rule to its taint's key (or "*"), or on a
// slice of the pool, or until it would evict few enough. The controller counts as the
// rule's status counts its pending pods, from the informers' handlers before the engine
// hears of a change, again every StatusPeriod, and at once for a scope the engine asks
// about that was not counted yet; the engine reads the counts, never the stores. An
// eviction that another taint makes due goes.
//
// # Differences from kube
//
// On purpose, each pinned by a test (kube_test.go ports kube's own test scenarios; those
// not listed here behave as kube's):
//
//   - A toleration with an empty effect counts for a NoExecute taint, as the API says (an
//     empty effect matches every effect) and as the scheduler's allocator reads it: a pod
//     whose claim tolerates {operator: Exists} stays. Kube (v1.37) counts only tolerations
//     of effect NoExecute and evicts it at once, from a device the allocator let it onto;
//     no kubernetes issue is filed (see tolerations.DeviceRules). TestKubeDifferences.
//   - A finished pod (Succeeded or Failed) is never evicted; kube deletes it
//     (kubernetes#96363). A terminating one is not either, as in kube. TestKubeDifferences.
//   - A taint's TimeAdded in the future (a skewed clock) counts from when the controller
//     first saw the taint; kube waits until TimeAdded. TestKubeDifferences.
//   - Two requests per eviction, the status patch and the DELETE, both bound to the pod's
//     UID; kube GETs the pod first. TestKubeEviction.
//   - A failed attempt is retried after the engine's backoff (100 ms, less up to 20% of
//     jitter, doubling up to 2 minutes; engine.Options.Backoff), which does not hammer an API
//     server that fails; kube's work queue retries after 5 ms, doubling. TestKubeRetry.
//   - Optional, off by default: the engine's budgets, among them Confirm, which holds a rule
//     that would evict too many pods until it is confirmed (kubernetes#141422); the
//     Eviction API instead of DELETE (Options.Mode).
//
// Errors are prefixed "device:".
package device
