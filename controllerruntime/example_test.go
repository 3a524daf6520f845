package controllerruntime_test

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/metrics"
	"github.com/taintevict/taintevict/controllerruntime"
	"github.com/taintevict/taintevict/eviction"
)

// An operator that evicts pods from tainted nodes, honouring PodDisruptionBudgets, with
// a brake against mass eviction, only on the replica that leads, with kube's metrics on
// the manager's /metrics and a readiness check on its /readyz.
func Example() {
	ctx := ctrl.SetupSignalHandler()
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		LeaderElection:          true,
		LeaderElectionID:        "taint-eviction",
		LeaderElectionNamespace: "kube-system",
		Metrics:                 metricsserver.Options{BindAddress: ":8080"},
		HealthProbeBindAddress:  ":8081",
		// No one reads managedFields: the cache is smaller without them.
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	if err != nil {
		panic(err)
	}
	_, err = controllerruntime.New(ctx, mgr, controllerruntime.Options{
		Mode:       clientgo.ModeEvict,
		PDBTimeout: 10 * time.Minute, // then delete, as kube does
		Metrics:    metrics.NewMeter(crmetrics.Registry),
		Manager:    eviction.Options{Brake: eviction.Brake{Fraction: 0.55}},
	})
	if err != nil {
		panic(err)
	}
	if err := mgr.Start(ctx); err != nil { // until a signal, or the lead is lost
		panic(err)
	}
}
