// Package controllerruntime runs taint eviction inside a controller-runtime manager
// (sigs.k8s.io/controller-runtime): [Controller] evicts pods from nodes with NoExecute
// taints they do not tolerate, when their tolerations run out, as kube-controller-manager's
// taint eviction controller does, from the manager's own cache and under its leader
// election.
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{LeaderElection: true, LeaderElectionID: "taint-eviction"})
//	...
//	_, err = controllerruntime.New(ctx, mgr, controllerruntime.Options{
//		Metrics: metrics.NewMeter(crmetrics.Registry), // served by the manager's metrics server
//	})
//	...
//	err = mgr.Start(ctx)
//
// kube-controller-manager's own taint eviction controller evicts on the same taints: turn it
// off (--controllers=*,-taint-eviction-controller), or both evict, and kube's ignores this
// one's budgets and brake.
//
// It is a module of its own, so that a program on client-go alone (package
// github.com/taintevict/taintevict/clientgo) does not link controller-runtime.
//
// # What it shares with the manager, and with clientgo
//
// The Controller keeps no cache: it reads the manager's (an [eviction.Cache] over it, the
// pods of a node found through a field index on spec.nodeName that [New] adds), and its
// event handlers on the manager's pod and node informers feed an [eviction.Manager]. It
// removes pods with clientgo's Deleters (kube's two calls, or the Eviction API with
// Options.Mode [clientgo.ModeEvict]), records kube's Events with clientgo's EventWriter,
// and keeps kube's metrics with a [clientgo.Meter]: give it package clientgo/metrics' Meter
// on controller-runtime's registry, and the manager's metrics server serves them. It adds
// a readiness check to the manager ([Controller.Ready]). For a cache as small as clientgo's,
// give the manager cache.Options{DefaultTransform: cache.TransformStripManagedFields()}:
// no one here reads managedFields.
//
// # Leader election
//
// A Controller needs the manager's leader election (a [manager.LeaderElectionRunnable]
// whose NeedLeaderElection is true unless Options say otherwise): on a manager with leader
// election, only the replica that leads runs it; every replica keeps the manager's cache
// synced. A new leader adds its handlers to its informers, which hand it every node and pod
// they hold, and only then tells its Manager that it has synced: the brake and Confirm
// count every node before anything goes, so a leader that takes over in the middle of an
// outage lets nothing go that the brake holds. Deadlines count from each taint's TimeAdded,
// so it evicts at the times the old leader would have. A manager that loses the lead
// cancels the Controller's context (a Deleter call under way is cancelled: it reached the
// server, and the new leader finds the pod being deleted, or it did not, and the new
// leader evicts the pod) and
// returns from its Start without waiting for it; [Controller.Stopped] tells when it has
// returned.
//
// # Errors
//
// Errors are prefixed "controllerruntime:".
package controllerruntime
