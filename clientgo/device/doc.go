// Package device evicts pods from tainted DRA devices. Its [Controller] is a drop-in for
// kube-controller-manager's device taint eviction controller, for a DRA driver or a
// controller to embed (examples/controller runs it with -controllers=device), built on
// [engine.Engine] and on package clientgo.
//
//	c, err := device.NewController(ctx, client, factory, device.Options{})
//	...
//	err = c.Run(ctx) // until ctx is done; or give c.Lead to a clientgo.Controller
//
// # The model
//
// As in kube. The holders are devices, named "driver/pool/device" ([ID]), with the taints
// of their entry in their pool's ResourceSlices and of every DeviceTaintRule that selects
// them. The targets are pods, bound to the devices of the ResourceClaims allocated and
// reserved for them ([Source.Describe], [PodGroupMode]), with the tolerations of the
// allocation results, matched by [tolerations.DeviceRules]. Only NoExecute taints evict. A
// pod goes at the earliest deadline over its bindings; removing the taint, the rule, the
// allocation or the reservation cancels. Each DeviceTaintRule's EvictionInProgress
// condition says what it evicts, as kube writes it (see [ReasonPodsPendingEviction]).
//
// # Holding a rule until it is confirmed
//
// With [engine.Options.Confirm], a DeviceTaintRule, or one pool's NoExecute taints, that
// would evict more than a fraction of the pods that use devices is held (kubernetes#141422:
// a rule with an empty selector evicts every such pod): Delayed with
// [engine.ReasonUnconfirmed], an Event on each pod ([ConfirmMessage]), the rule's status
// [ReasonEvictionPaused]. Its evictions go once [eviction.ConfirmAnnotation] names the
// taint's key (or "*") on the rule, or on a slice of the pool (of the newest generation),
// or once it would evict few enough.
//
// # Differences from kube
//
// On purpose, each pinned by a test; in all else kube's own test scenarios, ported, pass:
//
//   - A toleration with an empty effect counts, as the API reads it; kube (v1.37) counts
//     only effect NoExecute ([tolerations.Rules]).
//   - A finished pod is never evicted; kube deletes it (kubernetes#96363: a Job's
//     completed pod deleted, so the Job ran it again).
//   - A TimeAdded in the future (a skewed clock) counts from when the controller first saw
//     the taint; kube waits until TimeAdded.
//   - Two requests per eviction, the status patch and the DELETE, both bound to the pod's
//     UID; kube GETs the pod first.
//   - A failed delete is retried after [engine.Backoff] (100 ms, doubling up to 2
//     minutes); kube's work queue retries after 5 ms, doubling.
//   - Optional: the engine's budgets, and the Eviction API instead of DELETE ([Options.Mode]).
//
// Errors are prefixed "device:".
package device
